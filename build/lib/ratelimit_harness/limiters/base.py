"""The limiter contract, and the small base the built-in Redis limiters share.

A limiter answers ``check(identity) -> Decision`` for the policy it was built with.
Time is injected, never read behind the caller's back:

- ``clock`` is the app instance's own clock (``time.time`` by default). Limiters that compute
  time on the client (as most of the chapter's code does) read only this.
- ``server_clock`` stands in for Redis' clock. None (the default) means the Lua script reads
  ``redis.call('TIME')``; a callable is what virtual-time drivers and tests pass instead.

TTLs are always relative (PEXPIRE/EX), never absolute timestamps, so a driver that moves time
forward can age keys by the same amount.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable
from functools import cache
from importlib import resources
from typing import Any, ClassVar, Protocol

from ratelimit_harness.limiters.decision import Decision
from ratelimit_harness.limiters.lua import LuaScript
from ratelimit_harness.limiters.policy import Policy, PolicyError

Clock = Callable[[], float]


class Limiter(Protocol):
    """Anything that decides requests for one policy."""

    policy: Policy

    def check(self, identity: str) -> Decision:
        """Decide one request of ``identity`` (a user id, an IP, an API key)."""
        ...


def check_args(identity: str, cost: int = 1) -> tuple[str] | tuple[str, int]:
    """The arguments of ``check`` for one request: ``(identity,)`` for a request that costs 1,
    as every limiter takes it; ``(identity, cost)`` for a weighted one."""
    return (identity,) if cost == 1 else (identity, cost)


def refund_args(identity: str, decision: Decision, cost: int = 1) -> tuple[Any, ...]:
    """The arguments of ``refund``, which gives back the request ``decision`` admitted:
    ``(identity, decision)``, and its cost after them for a weighted one (as ``check_args``)."""
    return (identity, decision) if cost == 1 else (identity, decision, cost)


class ServerNow(str):
    """The ``now`` of a server-time script under an injected server clock: the clock's instant
    in microseconds, as text. Redis reads TIME when it runs the script, so a driver that holds a
    command back before sending it calls ``fresh()`` to read the clock at that moment."""

    clock: Clock

    def __new__(cls, clock: Clock) -> ServerNow:
        text = super().__new__(cls, str(round(clock() * 1e6)))
        text.clock = clock
        return text

    def fresh(self) -> str:
        return str(round(self.clock() * 1e6))


@cache
def lua_source(filename: str) -> str:
    """The text of a ``.lua`` file kept beside the limiters (read once per process)."""
    return resources.files("ratelimit_harness.limiters").joinpath(filename).read_text()


class RedisLimiter:
    """Shared plumbing: policy validation, key naming, clocks, and script loading."""

    policy_kinds: ClassVar[tuple[str, ...]]
    counts: ClassVar[str | None] = None  # what its windows count (``Policy.count``), if one way
    blocks: ClassVar[bool] = False  # whether it refuses an identity for a block once over
    prefix: ClassVar[str] = "ratelimit"
    script_file: ClassVar[str | None] = None

    def __init__(
        self,
        client: Any,
        policy: Policy,
        *,
        clock: Clock = time.time,
        server_clock: Clock | None = None,
        prefix: str | None = None,
    ) -> None:
        if not self.enforces(policy):
            counting = f" counting {self.counts}" if self.counts else ""
            given = f" counting {policy.count}" if self.counts else ""
            if self.blocks or policy.block is not None:
                counting += " with a block" if self.blocks else " without a block"
                given += " with a block" if policy.block is not None else " without a block"
            raise PolicyError(
                f"{type(self).__name__} enforces {' or '.join(self.policy_kinds)} policies"
                f"{counting}, not {policy.promise}{given}"
            )
        self.client = client
        self.policy = policy
        self.clock = clock
        self.server_clock = server_clock
        self.key_prefix = prefix or self.prefix
        self.key_tag = f"{_kebab_case(type(self).__name__)}:{policy.exact_params()}"
        if self.script_file:
            self.script = self.load_script(self.script_file)

    @classmethod
    def enforces(cls, policy: Policy) -> bool:
        """Whether this limiter can enforce ``policy``: its promise is one of ``policy_kinds``,
        its windows count what the limiter's do (``counts``, where it says), and it blocks
        exactly when the policy has a block (``blocks``)."""
        return (
            policy.promise in cls.policy_kinds
            and cls.counts in (None, policy.count)
            and cls.blocks == (policy.block is not None)
        )

    def load_script(self, filename: str) -> LuaScript:
        """The script, run by EVALSHA; the server loads it on its first NOSCRIPT."""
        return LuaScript(lua_source(filename))

    def key(self, identity: str, *parts: object) -> str:
        """``prefix:{identity}:algorithm:policy[:part...]``, for example
        ``ratelimit:{user:1}:fixed-window-lua:limit=5,window=2`` or, with a window's index,
        ``ratelimit:{user:1}:fixed-window-incr-expire:limit=5,window=2:900000000``.

        The braces are a Cluster hash tag: every key of one identity lives in one slot, so a
        script may touch them together. The algorithm (the class' name in kebab case, as the
        catalogue names it) and the policy's exact parameters (``Policy.exact_params``) keep two
        limiters, or two policies, of one identity apart: no shared count, no WRONGTYPE."""
        return ":".join([self.key_prefix, "{" + identity + "}", self.key_tag, *map(str, parts)])

    def server_now_arg(self) -> str:
        """The ``now`` argument for a server-time script: empty means 'read TIME'."""
        return "" if self.server_clock is None else ServerNow(self.server_clock)

    @property
    def limit(self) -> int:
        return int(_required(self.policy, "limit"))

    @property
    def capacity(self) -> int:
        return int(_required(self.policy, "capacity"))

    @property
    def window(self) -> float:
        return float(_required(self.policy, "window"))

    @property
    def rate(self) -> float:
        return float(_required(self.policy, "rate"))

    @property
    def window_seconds(self) -> int:
        """The window in whole seconds, rounded up, as EXPIRE takes it."""
        return math.ceil(self.window)

    @property
    def window_us(self) -> int:
        return round(self.window * 1e6)


def _kebab_case(name: str) -> str:
    """``FixedWindowLua`` -> ``fixed-window-lua``."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "-", name).lower()


def _required(policy: Policy, name: str) -> Any:
    value = getattr(policy, name)
    if value is None:
        raise PolicyError(f"policy {policy} has no {name}")
    return value
