"""Histories from a reference model are valid; one admission too many is always caught.

Decisions fall on a grid of QUANTUM seconds, each inside an interval of up to a quarter quantum
either side, so an injected admission at a saturated instant cannot escape by any placement.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.checkers import check
from harness.history import Operation, Outcome
from limiters import Policy
from tests.harness.checkers import reference

QUANTUM = 0.1
JITTER = QUANTUM / 4


@st.composite
def histories(
    draw: st.DrawFn, model: Callable[..., list[reference.Decided]], *params: float
) -> list[Operation]:
    steps = draw(st.lists(st.integers(0, 12), min_size=1, max_size=80))
    instants, t = [], 1000
    for step in steps:
        t += step
        instants.append(t * QUANTUM + QUANTUM / 2)  # never on a window boundary
    jitters = draw(
        st.lists(
            st.tuples(st.floats(0, JITTER), st.floats(0, JITTER)),
            min_size=len(instants),
            max_size=len(instants),
        )
    )
    decided = model(instants, *params)
    return [
        Operation(
            f"p{i % 3}",
            "k",
            d.instant - before,
            d.instant + after,
            Outcome.ALLOWED if d.allowed else Outcome.REJECTED,
            d.instant,
        )
        for i, (d, (before, after)) in enumerate(zip(decided, jitters, strict=True))
    ]


def with_intruder(history: list[Operation], saturated: Callable[[float], bool]) -> list[Operation]:
    """The history plus one admission at the instant of the first admission that left the
    policy saturated (or the history alone if none did)."""
    for op in history:
        if op.outcome is Outcome.ALLOWED and op.now is not None and saturated(op.now):
            return [*history, Operation("intruder", op.key, op.now, op.now, Outcome.ALLOWED)]
    return history


Model = Callable[..., list[reference.Decided]]
CASES = {
    "fixed-window:limit=3,window=1": (reference.fixed_window, (3, 1.0), 0.0),
    "sliding-window:limit=3,window=1": (reference.sliding_window, (3, 1.0), 0.0),
    # a bucket refills while placements shift: the intruder must overdraw by more than that
    "token-bucket:capacity=3,rate=2": (reference.token_bucket, (3, 2.0), 2 * JITTER * 2.0),
    "gcra:capacity=3,rate=2": (reference.token_bucket, (3, 2.0), 2 * JITTER * 2.0),
}


@pytest.mark.parametrize("spec", CASES)
def test_model_histories_are_valid_and_one_intruder_is_caught(spec: str) -> None:
    model, params, margin = CASES[spec]
    policy = Policy.parse(spec)

    @settings(max_examples=150, deadline=None)
    @given(histories(model, *params))
    def run(history: list[Operation]) -> None:
        verdict = check(history, policy)
        assert verdict.valid, verdict.to_json()
        assert not verdict.inconclusive
        instants = [op.now for op in history if op.now is not None]
        headroom = {d.instant: d.headroom for d in model(instants, *params)}
        intruded = with_intruder(history, lambda instant: headroom[instant] < 1 - margin - 1e-9)
        if intruded is not history:
            assert not check(intruded, policy).valid

    run()
