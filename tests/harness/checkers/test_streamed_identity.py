"""One identity judged as a stream: what it finds, what it keeps, and where it gives up (the
property test holds it to the checkers on drawn histories)."""

from __future__ import annotations

import random

import pytest

from ratelimit_harness.harness.checkers import check
from ratelimit_harness.harness.checkers.stream import common as streaming
from ratelimit_harness.harness.checkers.stream import fixed as streamed_fixed
from ratelimit_harness.harness.checkers.stream.common import NotStreamable
from ratelimit_harness.harness.checkers.stream.fixed import FixedWindowOver
from ratelimit_harness.harness.checkers.stream.identity import IdentityStream
from ratelimit_harness.harness.checkers.stream.rejections import FixedRoom
from ratelimit_harness.harness.history import Operation, Outcome
from ratelimit_harness.limiters import Policy
from tests.harness.checkers.factory import op

POLICY = Policy.parse("fixed-window:limit=2,window=1")


def streamed(ops: list[Operation], policy: Policy = POLICY, batch: int = 3) -> IdentityStream:
    stream = IdentityStream(ops[0].key, policy)
    for first in range(0, len(ops), batch):
        some = ops[first : first + batch]
        stream.add(range(first + 1, first + 1 + len(some)), some)
    return stream


def test_an_over_admission_and_a_wrongful_rejection_are_found_as_fixed_window_finds_them() -> None:
    ops = [
        op(10.1, 10.101),
        op(10.2, 10.201),
        op(10.3, 10.301),  # a third admission in [10, 11)
        op(11.1, 11.101),
        op(11.2, 11.201, "rejected"),  # one admission in [11, 12): room for one more
        op(11.3, 11.301, "rejected", key="k"),
    ]
    ops[5] = op(11.3, 11.301)  # the room is taken after the rejection
    found = streamed(ops).finish()
    whole = check(ops, POLICY)
    assert {kind: count for kind, (count, _) in found.items()} == {
        "over-admission": 1,
        "wrongful-rejection": 1,
    }
    for violation in whole.violations:
        count, witnesses = found[violation.kind]
        assert count == violation.count
        assert [w.to_json() for w in witnesses] == [w.to_json() for w in violation.witnesses]
    assert found["wrongful-rejection"][1][0].operations == [ops[4]]


def hammered(seconds: int, rate: int, limit: int, seed: int = 1) -> list[Operation]:
    """One identity asking ``rate`` times a second, the first ``limit`` requests of each window
    admitted, a few never answered."""
    rng = random.Random(seed)
    ops: list[Operation] = []
    admitted: dict[int, int] = {}
    for n in range(seconds * rate):
        t = 1_700_000_000 + n / rate
        window = int(t)
        admitted[window] = admitted.get(window, 0) + 1
        outcome = Outcome.ALLOWED if admitted[window] <= limit else Outcome.REJECTED
        if rng.random() < 0.001:
            outcome = Outcome.UNKNOWN
        complete = None if outcome is Outcome.UNKNOWN else t + rng.uniform(0.0001, 0.004)
        ops.append(Operation(f"app-{n % 4}", "user:1", t, complete, outcome))
    return ops


def test_what_a_stream_keeps_does_not_grow_with_the_history() -> None:
    """200 s of 500 requests a second, 200 admitted in each 1-s window: 40,000 admissions of
    100,000 operations. At the end it holds a few windows' worth."""
    ops = hammered(200, 500, limit=200)
    stream = streamed(ops, Policy.parse("fixed-window:limit=200,window=1"), batch=4096)
    over, wrong = stream.over, stream.wrong
    assert isinstance(over, FixedWindowOver)
    assert wrong is not None
    assert len(over.kept) <= streamed_fixed.KEPT_WINDOWS + 1
    assert over.kept_count <= 200 * (streamed_fixed.KEPT_WINDOWS + 1)
    assert len(over.either_side.pending) <= 200
    assert isinstance(wrong.room, FixedRoom)
    held = len(wrong.room.starts.kept) + len(wrong.room.ends.kept)
    assert held <= 2 * (2 * streaming.FORGET_AT + 4096 + 2 * 500)
    assert len(wrong.waiting) <= 4096
    assert stream.finish() == {}


@pytest.mark.parametrize(
    ("spec", "why"),
    [
        ("fixed-window:limit=2,window=1,anchor=first", "judged on the whole identity"),
        ("fixed-window:limit=2,window=1,block=5", "judged on the whole identity"),
        ("fixed-window:limit=2,window=1,count=attempts", "judged on the whole identity"),
        ("leaky-bucket:capacity=2,rate=1", "judged on the whole identity"),
    ],
)
def test_a_policy_no_stream_judges_is_judged_whole(spec: str, why: str) -> None:
    with pytest.raises(NotStreamable, match=why):
        IdentityStream("k", Policy.parse(spec))


@pytest.mark.parametrize(
    ("ops", "why"),
    [
        ([op(2.0), op(1.0)], "not in order of invoke"),
        ([op(1.0), op(2.0, cost=2)], "weighted or given back"),
        ([op(1.0)._replace(refund=(1.5, 1.6))], "weighted or given back"),
    ],
)
def test_operations_a_stream_cannot_judge_say_why(ops: list[Operation], why: str) -> None:
    stream = IdentityStream("k", POLICY)
    with pytest.raises(NotStreamable, match=why):
        stream.add(range(1, len(ops) + 1), ops)


def test_out_of_order_across_batches_is_found_too() -> None:
    stream = IdentityStream("k", POLICY)
    stream.add([1], [op(2.0)])
    with pytest.raises(NotStreamable, match="not in order of invoke"):
        stream.add([2], [op(1.0)])


SLIDING = Policy.parse("sliding-window:limit=2,window=1")


def test_a_sliding_window_streamed_finds_its_wrongful_rejection() -> None:
    ops = [
        op(10.0, 10.001),
        op(10.5, 10.501),
        op(11.2, 11.201, "rejected"),  # the first admission left the window at 11.0
        op(11.3, 11.301),
    ]
    found = streamed(ops, SLIDING).finish()
    whole = check(ops, SLIDING).of_kind("wrongful-rejection")[0]
    count, witnesses = found["wrongful-rejection"]
    assert count == whole.count == 1
    assert [w.to_json() for w in witnesses] == [w.to_json() for w in whole.witnesses]
    assert "over-admission" not in found


def test_a_sliding_window_that_may_be_over_admitted_is_searched_whole() -> None:
    ops = [op(10.0, 10.001), op(10.2, 10.201), op(10.4, 10.401)]  # three in one window
    assert check(ops, SLIDING).count("over-admission") == 1
    with pytest.raises(NotStreamable, match="over the rule: searched on the whole"):
        streamed(ops, SLIDING).finish()


@pytest.mark.parametrize("kind", ["token-bucket", "gcra"])
def test_a_bucket_streamed_finds_its_wrongful_rejection(kind: str) -> None:
    bucket = Policy.parse(f"{kind}:capacity=2,rate=1")
    ops = [
        op(10.0, 10.001),
        op(10.1, 10.101),
        op(10.2, 10.201, "rejected"),  # empty: right
        op(11.5, 11.501, "rejected"),  # more than a token back by then
        op(30.0, 30.001, "rejected"),  # full again, long after
    ]
    found = streamed(ops, bucket, batch=2).finish()
    whole = check(ops, bucket).of_kind("wrongful-rejection")[0]
    count, witnesses = found["wrongful-rejection"]
    assert count == whole.count == 2
    assert [w.to_json() for w in witnesses] == [w.to_json() for w in whole.witnesses]
    assert [w.operations[0].invoke for w in witnesses] == [11.5, 30.0]
