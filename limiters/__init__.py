"""The rate limiters under test: the chapter's catalogue, correct and broken, and plug-ins.

``build(name, client, policy)`` makes a limiter from a catalogue name or a ``module:attribute``.
"""

from typing import Any

from limiters.base import Clock, Limiter
from limiters.catalogue import CATALOGUE, Entry, Flaw
from limiters.decision import Decision
from limiters.plugin import PluginError, build_plugin
from limiters.policy import KINDS, Policy, PolicyError

__all__ = [
    "CATALOGUE",
    "KINDS",
    "Clock",
    "Decision",
    "Entry",
    "Flaw",
    "Limiter",
    "PluginError",
    "Policy",
    "PolicyError",
    "UnknownLimiter",
    "build",
]


class UnknownLimiter(ValueError):
    """A name that is neither in the catalogue nor a ``module:attribute``."""


def build(name: str, client: Any, policy: Policy, **clocks: Any) -> Limiter:
    """A catalogue limiter (``clock``/``server_clock`` keywords pass through), or a plug-in."""
    if name in CATALOGUE:
        return CATALOGUE[name].build(client, policy, **clocks)
    if ":" in name:
        return build_plugin(name, client, policy)
    raise UnknownLimiter(
        f"unknown limiter {name!r}; known: {', '.join(CATALOGUE)} or module:attribute"
    )
