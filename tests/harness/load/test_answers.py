"""Answers taken in by the batch: each completion stamped when its answer came, the view, the
promises and the header lies recorded as if at once; nothing before ``take_in``."""

from __future__ import annotations

from pathlib import Path

import pytest

from ratelimit_harness.harness.history import Outcome, merge_journals
from ratelimit_harness.harness.load.contract.journals import Journals, journal_paths
from ratelimit_harness.harness.load.contract.rules import default_rules
from ratelimit_harness.harness.load.judge.client_view import ClientView
from ratelimit_harness.harness.load.judge.promises import Promise, PromiseLog, read_promises
from ratelimit_harness.harness.load.traffic import answers as answers_module
from ratelimit_harness.harness.load.traffic.answers import Answer, Answers

API = default_rules().named("api")
TRUE = {
    "x-ratelimit-limit": "10",
    "x-ratelimit-remaining": "4",
    "x-ratelimit-reset": "1000",
    "ratelimit-policy": '"api";q=10;w=60',
    "ratelimit": '"api";r=4;t=5',
}


def answered(journals: Journals, at: float, status: int, headers: dict[str, str]) -> Answer:
    token = journals["api"].invoke("alice")
    told = headers.items()
    return Answer(API, token, status, at - 0.2, at - 0.1, at, "alice", told, "GET /x")


def test_nothing_is_recorded_until_taken_in_and_then_all_of_it(tmp_path: Path) -> None:
    journals, promises, view = (
        Journals(tmp_path, "client", "locust", clock=lambda: 99.0),
        PromiseLog(tmp_path),
        ClientView(),
    )
    taking = Answers(view, journals, promises)
    told_too_much = {**TRUE, "x-ratelimit-remaining": "10", "ratelimit": '"api";r=10'}
    taking.add(answered(journals, 100.0, 200, TRUE))
    taking.add(answered(journals, 101.0, 200, told_too_much))
    taking.add(answered(journals, 102.0, 0, {}))  # no answer
    [path] = journal_paths(tmp_path, "client", "api")
    assert [op.outcome for op in merge_journals([path])] == [Outcome.UNKNOWN] * 3
    assert view.outcomes == {}
    taking.take_in()
    ops = merge_journals([path])
    assert [(op.outcome, op.complete) for op in ops] == [
        (Outcome.ALLOWED, 100.0),  # stamped when the answer came, not when taken in
        (Outcome.ALLOWED, 101.0),
        (Outcome.UNKNOWN, 102.0),  # no answer: it ended, deciding nothing known
    ]
    assert view.outcomes["api"] == {"allowed": 2, "unknown": 1}
    assert view.latencies.summary("api")["count"] == 2
    assert view.lies["api"] == {"remaining-over-budget": 1}
    assert view.examples["api"]["remaining-over-budget"].startswith("GET /x -> 200 {")
    assert read_promises(tmp_path, "api") == [
        Promise("alice", 99.9, 100.0, 4),
        Promise("alice", 100.9, 101.0, 10),
    ]
    assert taking.pending == []


def test_too_many_pending_are_taken_in_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(answers_module, "PENDING_AT_MOST", 2)
    journals, view = Journals(tmp_path, "client", "locust", clock=lambda: 99.0), ClientView()
    taking = Answers(view, journals, None)
    for n in range(2):
        taking.add(answered(journals, 100.0 + n, 429, {}))
    assert view.outcomes == {}
    taking.add(answered(journals, 103.0, 429, {}))
    assert view.outcomes["api"] == {"rejected": 3}
    assert taking.pending == []


def test_header_names_are_read_in_any_case_and_unchecked_decides_nothing(
    tmp_path: Path,
) -> None:
    journals, view = Journals(tmp_path, "client", "locust", clock=lambda: 99.0), ClientView()
    taking = Answers(view, journals, PromiseLog(tmp_path))
    shouting = {name.upper(): value for name, value in TRUE.items()}
    taking.add(answered(journals, 100.0, 200, shouting))
    taking.add(answered(journals, 101.0, 200, {"X-RateLimit-Unchecked": "1"}))
    taking.take_in()
    assert view.outcomes["api"] == {"allowed": 1, "unknown": 1}
    assert read_promises(tmp_path, "api") == [Promise("alice", 99.9, 100.0, 4)]
    assert view.lies == {}
