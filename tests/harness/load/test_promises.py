"""X-RateLimit-Remaining held against the history: what a promise may claim, and the log."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ratelimit_harness.harness.history import Operation, Outcome
from ratelimit_harness.harness.load.judge.promises import (
    Admissions,
    Promise,
    PromiseLog,
    broken_promises,
    read_promises,
)
from ratelimit_harness.limiters import Policy

FIXED = Policy.parse("fixed-window:limit=3,window=10")
SLIDING = Policy.parse("sliding-window:limit=3,window=10")


def admitted(invoke: float, complete: float, key: str = "k") -> Operation:
    return Operation("app-0", key, invoke, complete, Outcome.ALLOWED)


HISTORY = [admitted(1.0, 1.1), admitted(2.0, 2.1)]


@pytest.mark.parametrize(
    ("policy", "promise", "broken"),
    [
        (FIXED, Promise("k", 3.0, 3.1, 0), False),  # two before it and itself: none left
        (FIXED, Promise("k", 3.0, 3.1, 1), True),
        (FIXED, Promise("other", 3.0, 3.1, 2), False),  # another identity's count
        (FIXED, Promise("k", 2.05, 3.1, 1), False),  # the second may come after it
        (FIXED, Promise("k", 9.9, 10.2, 2), False),  # straddles the edge: window unknown
        (FIXED, Promise("k", 12.0, 12.1, 2), False),  # a new window
        (SLIDING, Promise("k", 11.5, 11.6, 1), False),  # the admission at 1.0 has left
        (SLIDING, Promise("k", 10.5, 10.6, 1), True),  # both still count
        (Policy.parse("token-bucket:capacity=3,rate=1"), Promise("k", 3.0, 3.1, 2), False),
    ],
)
def test_a_promise_is_broken_only_when_the_history_proves_it(
    policy: Policy, promise: Promise, broken: bool
) -> None:
    found = broken_promises([promise], HISTORY, policy)
    assert bool(found) == broken
    if broken:
        assert found[0].key == "k"
        assert f"told {promise.remaining} remain" in found[0].detail


def test_the_log_reads_back_what_was_added_and_skips_a_torn_line(tmp_path: Path) -> None:
    log = PromiseLog(tmp_path)
    promises = [Promise("k", 1.0, 1.5, 2), Promise("j", 2.0, 2.25, 0)]
    for promise in promises:
        log.add("api", promise)
    (path,) = (tmp_path / "promises" / "api").glob("*.jsonl")
    with path.open("a") as torn:
        torn.write('{"key": "k", "invo')
    assert read_promises(tmp_path, "api") == promises
    assert read_promises(tmp_path, "login") == []


def test_under_several_limits_a_promise_is_held_to_each() -> None:
    policy = Policy.parse("fixed-window:limit=3,window=10 + fixed-window:limit=100,window=60")
    history = [
        Operation("p", "k", 1.0, 1.1, Outcome.ALLOWED),
        Operation("p", "k", 2.0, 2.1, Outcome.ALLOWED),
    ]
    # two counted, and itself: none left in the first limit, though 97 in the second
    (broken,) = broken_promises([Promise("k", 3.0, 3.1, 97)], history, policy)
    assert broken.detail.startswith("under fixed-window:limit=3,window=10: told 97 remain")
    assert broken_promises([Promise("k", 3.0, 3.1, 0)], history, policy) == []


@settings(deadline=None, max_examples=300)
@given(
    st.lists(
        st.tuples(st.integers(0, 40), st.integers(0, 8), st.one_of(st.none(), st.integers(0, 8))),
        max_size=25,
    ),
    st.lists(st.tuples(st.integers(-4, 48), st.integers(0, 6), st.integers(0, 6)), max_size=10),
)
def test_admissions_count_as_a_pass_over_them_would(
    drawn: list[tuple[int, int, int | None]], asked: list[tuple[int, int, int]]
) -> None:
    """The sorted counts agree with the rule read plainly, admission by admission: invoked at
    or after since, completed before the promise was sent, not given back before received."""
    ops = [
        Operation(
            "app-0",
            "k",
            start / 4,
            (start + took) / 4,
            Outcome.ALLOWED,
            refund=None if back is None else ((start + took + back) / 4, None),
        )
        for start, took, back in drawn
    ]
    admissions = Admissions(ops)
    for since, sent, took in asked:
        since_at, sent_at = since / 4, (since + sent) / 4
        received = sent_at + took / 4
        plainly = [
            op
            for op in ops
            if op.invoke >= since_at
            and op.complete is not None
            and op.complete < sent_at
            and (op.refund is None or op.refund[0] >= received)
        ]
        assert admissions.count(since_at, sent_at, received) == len(plainly)
        counted = admissions.counted(since_at, sent_at, received)
        assert sorted(map(id, counted)) == sorted(map(id, plainly))
        assert admissions.counted(since_at, sent_at, received, last=2) == counted[-2:]
