"""A policy string, ``kind:name=value,...``, and what it allows in a span of time."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Allowance:
    """At most ``most`` admissions in ``span`` seconds; ``aligned`` when the spans are the
    aligned windows (a fixed window), else any span of that length."""

    span: float
    most: float
    aligned: bool


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
    """Windows allow their limit per window; buckets ``capacity + rate x d`` in a span d (d = 1
    s, or the time to refill the capacity when that is longer); the leaky bucket's departures
    ``1 + rate x d``. None for a policy this does not know, and for windows started by
    admissions (``anchor=first``), which no span of fixed length bounds but as aligned ones. A
    composite (``a + b``) is drawn against its first limit, as it is written."""
    if "+" in spec:
        return allowance(spec.partition("+")[0])
    kind, p = parse(spec)
    if "anchor=first" in spec.replace(" ", ""):
        return None
    if kind in ("fixed-window", "sliding-window", "sliding-counter") and "window" in p:
        return Allowance(p["window"], p["limit"], aligned=kind != "sliding-window")
    if kind in ("token-bucket", "gcra") and p.get("rate"):
        span = max(1.0, p["capacity"] / p["rate"])
        return Allowance(span, p["capacity"] + p["rate"] * span, aligned=False)
    if kind == "leaky-bucket" and p.get("rate"):
        span = max(1.0, 1 / p["rate"])
        return Allowance(span, 1 + p["rate"] * span, aligned=False)
    return None
