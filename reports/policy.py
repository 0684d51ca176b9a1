"""A policy string, ``kind:name=value,...``, and what it allows in a span of time."""

from __future__ import annotations

from ratelimit_harness.harness.checkers.shared.allowance import Allowance, per_span
from ratelimit_harness.limiters.policy import Policy, PolicyError

__all__ = ["Allowance", "allowance", "parse"]


def parse(spec: str) -> tuple[str, dict[str, float]]:
    """The kind and the numeric parameters (an option's word, as ``anchor=first``, is left out)."""
    kind, _, rest = spec.partition(":")
    params = {}
    for part in filter(None, rest.split(",")):
        name, _, value = part.partition("=")
        try:
            params[name.strip()] = float(value)
        except ValueError:
            continue
    return kind.strip(), params


def allowance(spec: str) -> Allowance | None:
    """What ``spec`` allows in a span of time (``per_span``); None for a policy this version
    does not know."""
    try:
        return per_span(Policy.parse(spec))
    except PolicyError:
        return None
