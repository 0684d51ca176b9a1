"""Plug-in limiters for the load tests, written as a user would (``module:attribute``)."""

import time
from dataclasses import replace
from typing import Any

from ratelimit_harness.limiters import Decision, Policy
from ratelimit_harness.limiters.fixed_window_lua import FixedWindowLua


def boastful(client: Any, policy: Policy) -> Any:
    """A correct fixed window whose admissions always claim the whole budget but one remains."""
    inner = FixedWindowLua(client, policy)

    def check(identity: str) -> Decision:
        decision = inner.check(identity)
        if decision.allowed and policy.limit is not None:
            return replace(decision, remaining=policy.limit - 1)
        return decision

    return check


def slow(client: Any, policy: Policy) -> Any:
    """A correct fixed window that takes half a second to decide."""
    inner = FixedWindowLua(client, policy)

    def check(identity: str) -> Decision:
        time.sleep(0.5)
        return inner.check(identity)

    return check


def undecided(client: Any, policy: Policy) -> Any:
    """A limiter that answers what is not a decision."""
    return lambda identity: "maybe"
