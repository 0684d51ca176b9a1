"""A block's excuse (``harness/checkers/policies/block.py``) against a brute-force oracle, on
small random histories of one key's rejections and unknown operations.

The oracle is the promise (``block=B``), tried placement by placement: each rejection, and each
unknown operation that may have been one (or may not have been refused at all), at an instant of
its interval on a grid of quarter seconds. Taken in order of their instants, a refusal starts a
block of B unless it lies inside one; several at one instant start one block, whichever is
first. A rejection may lie inside a block iff some placement puts it there, with the others at
its own instant before it (the order of one instant is unknown; that order excuses most).

The checker may excuse more (it is sound, not exact), never less: a rejection it leaves to
stand must lie outside every block in every placement. The grid is exact for the same reason
as the main oracle's: every interval's end lies on it, and B is a multiple of a quarter.
"""

from __future__ import annotations

from itertools import product

from hypothesis import given, settings
from hypothesis import strategies as st

from ratelimit_harness.harness.checkers.placement.search import Findings
from ratelimit_harness.harness.checkers.policies.block import unblocked
from ratelimit_harness.harness.history import Operation, Outcome
from ratelimit_harness.harness.history.verdict import Witness

GRID = 0.25
# mostly rejections; an open one never answered: it may be refused any instant after its invoke
KINDS = ("rejected", "rejected", "rejected", "rejected", "unknown", "open")


def instants(op: Operation, until: float) -> list[float | None]:
    """Where ``op`` may have been refused, up to ``until`` (later ones do not matter); None for
    an unknown one that was never refused."""
    last = until if op.complete is None else min(op.complete, until)
    placed: list[float | None] = [
        n * GRID for n in range(round(op.invoke / GRID), round(last / GRID) + 1)
    ]
    return [*placed, None] if op.outcome is Outcome.UNKNOWN else placed


def may_lie_inside(rejection: Operation, others: list[Operation], block: float) -> bool:
    """Whether some placement puts ``rejection`` inside a block another refusal started."""
    assert rejection.complete is not None
    for at in instants(rejection, rejection.complete):
        assert at is not None
        for placed in product(*(instants(op, at) for op in others)):
            blocked_until = -float("inf")
            for t in sorted(t for t in placed if t is not None):
                if t >= blocked_until:
                    blocked_until = t + block
            if at < blocked_until:
                return True
    return False


# up to 8 s of operations, most of them a point: blocks of 1 or 2.5 s then chain and overlap
operations = st.lists(
    st.tuples(st.integers(0, 32), st.sampled_from((0, 0, 0, 1, 2, 4)), st.sampled_from(KINDS)),
    min_size=1,
    max_size=7,
)


@settings(deadline=None, max_examples=500)
@given(operations, st.sampled_from([1.0, 2.5]))
def test_a_rejection_the_block_leaves_standing_lies_outside_every_block(
    drawn: list[tuple[int, int, str]], block: float
) -> None:
    history = [
        Operation(
            "p1",
            "k",
            start * GRID,
            None if kind == "open" else (start + length) * GRID,
            Outcome.REJECTED if kind == "rejected" else Outcome.UNKNOWN,
        )
        for start, length, kind in drawn
    ]
    rejections = [op for op in history if op.outcome is Outcome.REJECTED]
    accused = Findings([Witness("k", (op.invoke, op.invoke), [op], "") for op in rejections])
    standing = unblocked(accused, history, block).violations
    for witness in standing:
        (rejection,) = witness.operations
        others = [op for op in history if op is not rejection]
        assert not may_lie_inside(rejection, others, block), rejection
