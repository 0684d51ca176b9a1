"""X-RateLimit-Remaining held against the history: what a promise may claim, and the log."""

from __future__ import annotations

from pathlib import Path

import pytest

from ratelimit_harness.harness.history import Operation, Outcome
from ratelimit_harness.harness.load.promises import (
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
