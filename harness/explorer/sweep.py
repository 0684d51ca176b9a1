"""Before any random search, the schedules with one preemption, tried in order of length.

Systematic testers find most races with very few preemptions (CHESS's preemption bounding):
here instance 0 stops between two of its round trips, instance 1 runs a whole request, then
instance 0 finishes; or instance 0 crashes there. Each stopping place is tried in turn, first
on a fresh key, then on a key one request short of the policy's budget (where a lost update
first admits one too many). A read-then-write race needs one preemption, a write whose TTL
comes in a later command one crash, so each is found in a handful of schedules, and the first
schedule that shows it is already the shortest of its family: nothing to shrink.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ratelimit_harness.harness.explorer.actions import Action, Crash, Step, Through
from ratelimit_harness.limiters import Policy

MAX_STEPS = 8  # stopping places tried in instance 0's request: requests with up to 7 round trips


@dataclass(frozen=True)
class Preemption:
    """``warm`` whole requests by instance 0, then ``steps`` of its next request (the first
    starts it, each further one sends a command), then the preemption: another instance's
    request, or instance 0's crash."""

    identity: str
    warm: int
    steps: int
    crash: bool = False

    def head(self) -> list[Action]:
        """Up to the preemption: instance 0 must still be inside its request after it."""
        warm: list[Action] = [Through(0, self.identity)] * self.warm
        return warm + [Step(0, self.identity)] * self.steps

    def tail(self) -> list[Action]:
        """Instance 1 runs a whole request, then instance 0 finishes its own; or instance 0
        dies there, its next command never sent."""
        if self.crash:
            return [Crash(0)]
        return [Through(1, self.identity), Through(0, self.identity)]


def warm_ups(policy: Policy) -> list[int]:
    """A fresh key, and a key one admission short of the budget."""
    budget = int(policy.limit or policy.capacity or 1)
    return sorted({0, max(budget - 1, 0)})


def families(policy: Policy, identity: str, instances: int = 2) -> Iterator[list[Preemption]]:
    """One family per warm-up, its stopping places in order, each with both preemptions (only
    the crash when there is no other instance); the explorer leaves a family at the first
    stopping place where instance 0's request has already ended."""
    crashes = (False, True) if instances > 1 else (True,)
    for warm in warm_ups(policy):
        yield [
            Preemption(identity, warm, steps, crash)
            for steps in range(1, MAX_STEPS + 1)
            for crash in crashes
        ]
