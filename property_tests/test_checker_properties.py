"""Histories from a reference model are valid; one admission too many is always caught.

Decisions fall on a grid of QUANTUM seconds, each inside an interval of up to a quarter quantum
either side, so an injected admission at a saturated instant cannot escape by any placement.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ratelimit_harness.harness.checkers import check
from ratelimit_harness.harness.checkers.shared.edges import EDGE
from ratelimit_harness.harness.history import Operation, Outcome
from ratelimit_harness.limiters import Policy
from ratelimit_harness.limiters.reference import Reference
from tests.clocks import ManualClock

QUANTUM = 0.1
JITTER = QUANTUM / 4


@dataclass
class Decided:
    instant: float
    allowed: bool
    budget: float  # left right after the decision
    # a window started by an admission: whether it started clear of any admission a window (and
    # the edge, and the jitter) before, so that it starts there under every placement
    clear: bool = True


def decide(policy: Policy, instants: list[float]) -> list[Decided]:
    clock = ManualClock(0.0)
    model = Reference(policy, clock=clock)
    decided = []
    for instant in instants:
        clock.now = instant
        allowed = model.check("k").allowed
        decided.append(Decided(instant, allowed, model.budget("k")))
    if policy.anchor == "first":
        mark_windows_clear(decided, policy.window or 1.0)
    return decided


def mark_windows_clear(decided: list[Decided], window: float) -> None:
    started = last = -math.inf
    clear = True
    for d in decided:
        if d.allowed and d.instant >= started + window:
            started, clear = d.instant, d.instant > last + window + EDGE + 2 * JITTER
        d.clear = clear
        last = d.instant if d.allowed else last


@st.composite
def histories(draw: st.DrawFn, policy: Policy) -> list[Operation]:
    steps = draw(st.lists(st.integers(0, 12), min_size=1, max_size=80))
    instants, t = [], 1000
    for step in steps:
        t += step
        instants.append(t * QUANTUM + QUANTUM / 2)  # never on a window boundary
    jitter = st.tuples(st.floats(0, JITTER), st.floats(0, JITTER))
    jitters = draw(st.lists(jitter, min_size=len(instants), max_size=len(instants)))
    return [
        Operation(
            f"p{i % 3}",
            "k",
            d.instant - before,
            d.instant + after,
            Outcome.ALLOWED if d.allowed else Outcome.REJECTED,
            d.instant,
        )
        for i, (d, (before, after)) in enumerate(
            zip(decide(policy, instants), jitters, strict=True)
        )
    ]


def with_intruder(history: list[Operation], saturated: Callable[[float], bool]) -> list[Operation]:
    """The history plus one admission at the instant of the first admission that left the
    policy saturated (or the history alone if none did)."""
    for op in history:
        if op.outcome is Outcome.ALLOWED and op.now is not None and saturated(op.now):
            return [*history, Operation("intruder", op.key, op.now, op.now, Outcome.ALLOWED)]
    return history


# a bucket refills while placements shift: the intruder must overdraw by more than that
CASES = {
    "fixed-window:limit=3,window=1": 0.0,
    "fixed-window:limit=3,window=1,anchor=first": 0.0,
    "sliding-window:limit=3,window=1": 0.0,
    "token-bucket:capacity=3,rate=2": 2 * JITTER * 2.0,
    "gcra:capacity=3,rate=2": 2 * JITTER * 2.0,
}


@pytest.mark.parametrize("spec", CASES)
def test_model_histories_are_valid_and_one_intruder_is_caught(spec: str) -> None:
    margin = CASES[spec]
    policy = Policy.parse(spec)

    @settings(deadline=None)
    @given(histories(policy))
    def run(history: list[Operation]) -> None:
        verdict = check(history, policy)
        assert verdict.valid, verdict.to_json()
        assert not verdict.inconclusive
        instants = [op.now for op in history if op.now is not None]
        budget = {d.instant: d.budget for d in decide(policy, instants)}
        clear = {d.instant: d.clear for d in decide(policy, instants)}
        intruded = with_intruder(
            history, lambda instant: budget[instant] < 1 - margin - 1e-9 and clear[instant]
        )
        if intruded is not history:
            assert not check(intruded, policy).valid

    run()
