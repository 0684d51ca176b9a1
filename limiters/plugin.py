"""A user's own limiter, plugged in as ``module:attribute``.

The attribute is a factory called as ``factory(client, policy)`` (a redis-py client and the
parsed Policy) that returns a callable ``check(identity)``; ``check`` returns a bool or an object
with ``.allowed``. It may read ``time.time()`` itself.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from limiters.decision import Decision
from limiters.policy import Policy


class PluginError(ValueError):
    """A ``module:attribute`` that does not name a usable limiter factory."""


def load_factory(spec: str) -> Callable[[Any, Policy], Callable[[str], object]]:
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise PluginError(f"expected module:attribute, got {spec!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise PluginError(f"cannot import {module_name!r} for {spec!r}: {error}") from None
    factory = module
    for part in attribute.split("."):
        try:
            factory = getattr(factory, part)
        except AttributeError:
            raise PluginError(f"{module_name!r} has no attribute {attribute!r}") from None
    if not callable(factory):
        raise PluginError(f"{spec} is not callable")
    return factory


class PluginLimiter:
    """Presents a user's ``check`` callable as a Limiter."""

    def __init__(self, check: Callable[[str], object], policy: Policy) -> None:
        if not callable(check):
            raise PluginError(f"the factory returned {check!r}, not a callable check(identity)")
        self._check = check
        self.policy = policy

    def check(self, identity: str) -> Decision:
        return Decision.from_user(self._check(identity))


def plugin_builder(spec: str) -> Callable[..., PluginLimiter]:
    """Import the factory now; build with ``builder(client, policy)``. A plug-in reads its own
    clock, so the clock keywords the catalogue's limiters take are ignored."""
    factory = load_factory(spec)

    def builder(client: Any, policy: Policy, **_clocks: Any) -> PluginLimiter:
        try:
            check = factory(client, policy)
        except Exception as error:
            raise PluginError(f"{spec}(client, policy) raised {_described(error)}") from error
        return PluginLimiter(check, policy)

    return builder


def _described(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}".replace("\n", " ")
