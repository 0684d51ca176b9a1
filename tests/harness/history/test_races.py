"""A race's summary (what ``race --json`` writes): read back as written, seconds rounded."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ratelimit_harness.harness.history.races import RACE, RaceFlaw, RaceSummary

FLAW = RaceFlaw(
    kinds=["over-admission"],
    faults=["skew"],
    needs=["skew 0.001 s"],
    clocks_apart=0.001,
    trace="runs/race-x/trace.json",
    steps=10,
    actions=4,
    found_by="bounded",
    schedules=10,
    seconds_to_find=0.14049,
)
SUMMARY = RaceSummary(
    limiter="fixed-window-incr-expire",
    policy="fixed-window:limit=1,window=10",
    nemesis=["crash", "stall", "skew"],
    max_skew=None,
    found=["over-admission"],
    flaws=[FLAW],
    examples=332,
    examples_to_find=10,
    found_by="bounded",
    coverage={"bound": "2 instances x 2 requests", "schedules": 10, "complete": False},
    covered="2 instances x 2 requests: ...; then 70 random schedules (seed 1)",
    seconds_to_find=0.14049,
    seconds=6.0886,
    trace_steps=10,
    trace="runs/race-x/trace.json",
    decisions=703,
    errors=0,
    first_error=None,
    void=0,
    unconfirmed=[{"found": ["over-admission"], "trace": ["  1. app-0  t=1.000  check(user:1)"]}],
    unconfirmed_count=1,
    search_ended=None,
    unscheduled=0,
    first_unscheduled=[],
    allow_unscheduled=False,
    off_clock=0,
    first_off_clock=None,
    allow_real_clock=False,
)


def test_a_summary_is_read_back_as_written_with_its_seconds_rounded() -> None:
    written: dict[str, Any] = json.loads(json.dumps(SUMMARY.to_json()))
    assert (written["seconds_to_find"], written["seconds"]) == (0.14, 6.089)
    assert written["flaws"] == [FLAW.to_json()]
    read = RaceSummary.from_json(written)
    flaw = replace(FLAW, seconds_to_find=0.14)
    assert read == replace(SUMMARY, flaws=[flaw], seconds_to_find=0.14, seconds=6.089)
    assert read.to_json() == written
    assert list(read.to_json()) == list(written)  # the keys in the order written


def test_a_race_not_allowed_to_judge_without_what_it_could_not_see_is_refused() -> None:
    assert not SUMMARY.unscheduled_refused
    assert not SUMMARY.off_clock_refused
    unseen = replace(SUMMARY, unscheduled=3, first_unscheduled=["TIME"])
    assert unseen.unscheduled_refused
    assert not replace(unseen, allow_unscheduled=True).unscheduled_refused
    assert not replace(SUMMARY, unscheduled=None).unscheduled_refused  # not counted here
    off = replace(SUMMARY, off_clock=2, first_off_clock="app-0 reported now=0.000")
    assert off.off_clock_refused
    assert not replace(off, allow_real_clock=True).off_clock_refused


def test_a_summary_file_is_read_back_and_another_file_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / RACE
    SUMMARY.write(path)
    assert RaceSummary.read(path).to_json() == SUMMARY.to_json()
    path.write_text('{"limiter": "x"}')
    with pytest.raises(ValueError, match=r"race.json: not a race's summary \(KeyError"):
        RaceSummary.read(path)
    path.write_text("{half")
    with pytest.raises(ValueError, match="not a race's summary"):
        RaceSummary.read(path)
