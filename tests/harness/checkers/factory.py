"""Hand-made operations for checker tests."""

from __future__ import annotations

from ratelimit_harness.harness.history import Operation, Outcome


def op(
    invoke: float,
    complete: float | None = None,
    outcome: str = "allowed",
    *,
    key: str = "k",
    process: str = "p1",
    now: float | None = None,
    cost: int = 1,
) -> Operation:
    """An operation; ``complete`` defaults to ``invoke`` (a point), None only if given so."""
    done = invoke if complete is None and outcome != "unknown" else complete
    return Operation(process, key, invoke, done, Outcome(outcome), now, cost=cost)


def points(*instants: float, outcome: str = "allowed") -> list[Operation]:
    return [op(t, t, outcome, process=f"p{i % 3}") for i, t in enumerate(instants)]
