"""The rate limiters under test: the chapter's catalogue, correct and broken, and plug-ins.

``build(name, client, policy)`` makes a limiter from a catalogue name or a ``module:attribute``.
"""

from collections.abc import Callable
from typing import Any

from ratelimit_harness.limiters.base import Clock, Limiter
from ratelimit_harness.limiters.catalogue import CATALOGUE, Entry, Flaw
from ratelimit_harness.limiters.decision import Decision
from ratelimit_harness.limiters.plugin import PluginError, name_of, plugin_builder
from ratelimit_harness.limiters.policy import KINDS, Policy, PolicyError
from ratelimit_harness.limiters.program import EXEC, ProgramError, program_builder

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
    "ProgramError",
    "UnknownLimiter",
    "build",
    "name_of",
    "resolve",
]


class UnknownLimiter(ValueError):
    """A name that is neither in the catalogue nor a ``module:attribute``."""


def resolve(name: str | Callable[..., Any]) -> Callable[..., Limiter]:
    """What builds the limiter called ``name``, as ``builder(client, policy, **clocks)``: a
    catalogue entry, or a plug-in (imported now, so a bad name fails before any Redis starts),
    named ``module:attribute`` or given as the factory itself."""
    if not isinstance(name, str):
        if not callable(name):
            raise UnknownLimiter(f"a limiter is a name or a factory, not {name!r}")
        return plugin_builder(name)
    if name in CATALOGUE:
        return CATALOGUE[name].build
    if name.startswith(EXEC):
        return program_builder(name.removeprefix(EXEC))
    if ":" in name:
        return plugin_builder(name)
    known = f"{', '.join(CATALOGUE)}, module:attribute or {EXEC}COMMAND"
    raise UnknownLimiter(f"unknown limiter {name!r}; known: {known}")


def build(name: str, client: Any, policy: Policy, **clocks: Any) -> Limiter:
    """A catalogue limiter (``clock``/``server_clock`` keywords pass through), or a plug-in."""
    return resolve(name)(client, policy, **clocks)
