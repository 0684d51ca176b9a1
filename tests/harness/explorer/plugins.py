"""Plug-in limiters for the explorer's tests, written as a user would (``module:attribute``)."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from typing import Any

from ratelimit_harness.limiters import Decision, Policy
from ratelimit_harness.limiters.fixed_window_lua import FixedWindowLua

RELEASE = threading.Event()  # set by a test to let ``blocking`` checks go


def blocking(client: Any, policy: Policy) -> Any:
    """A limiter that waits on something the explorer cannot schedule (a real lock, say)."""

    def check(identity: str) -> bool:
        RELEASE.wait(30)
        return True

    return check


def raising(client: Any, policy: Policy) -> Any:
    """A limiter whose every check raises."""

    def check(identity: str) -> bool:
        raise RuntimeError(f"no connection to the rate service for {identity}")

    return check


def undecided(client: Any, policy: Policy) -> Any:
    """A limiter that answers what is not a decision."""
    return lambda identity: "maybe"


def sometimes_raising(client: Any, policy: Policy) -> Any:
    """A correct fixed window whose every third check (per instance) raises before deciding."""
    inner, calls = FixedWindowLua(client, policy), [0]

    def check(identity: str) -> Decision:
        calls[0] += 1
        if calls[0] % 3 == 0:
            raise RuntimeError("the rate service hiccuped")
        return inner.check(identity)

    return check


def writes_then_raises(client: Any, policy: Policy) -> Any:
    """A limiter that counts the request in Redis, then raises: it may have counted."""

    def check(identity: str) -> bool:
        client.incr(f"count:{identity}")
        raise RuntimeError("lost the reply")

    return check


def fail_open(client: Any, policy: Policy) -> Any:
    """A limiter that admits whenever anything goes wrong, as many production ones do."""

    def check(identity: str) -> bool:
        try:
            return bool(client.incr(f"count:{identity}") <= (policy.limit or 0))
        except Exception:
            return True

    return check


ARMED = threading.Event()  # while set, ``over_admits_while_armed`` admits what it should refuse


def over_admits_while_armed(client: Any, policy: Policy) -> Any:
    """A correct fixed window (server time read from the instance's clock, so correct while
    clocks agree) that admits every request it should refuse while ``ARMED`` is set: a test
    clears it once a find is made, and re-runs no longer show the find."""
    inner = FixedWindowLua(client, policy, server_clock=time.time)

    def check(identity: str) -> Decision:
        decision = inner.check(identity)
        if not decision.allowed and ARMED.is_set():
            return replace(decision, allowed=True)
        return decision

    return check
