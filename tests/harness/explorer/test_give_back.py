"""Races where admitted requests are given back (``refund``): the history records each
give-back, and the lost update of a give-back in two round trips is found."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest

from ratelimit_harness.harness.cli import main
from ratelimit_harness.harness.explorer.schedule.run import run_schedule
from ratelimit_harness.harness.explorer.search.drawing import GIVE_BACKS
from ratelimit_harness.harness.history import Outcome
from ratelimit_harness.harness.provision import RedisServer
from tests.harness.explorer.schedules import setup, steps

pytestmark = pytest.mark.integration

POLICY = "fixed-window:limit=2,window=10"


def test_a_give_back_between_two_round_trips_loses_an_admission(
    redis_server: RedisServer,
) -> None:
    racy = replace(
        setup(redis_server.url, "fixed-window-refund-get-set", POLICY), give_backs=GIVE_BACKS
    )
    # app-0 is admitted and reads the count to give it back; app-1 is admitted, then refused;
    # app-0 writes the count it read less one, over app-1's admission; two more are admitted
    result, verdict = run_schedule(racy, steps(0, 0, 0, 1, 1, 1, 1, 0, 1, 1, 0, 0))
    given_back = [op for op in result.history if op.refund is not None]
    assert len(given_back) == 1
    (op,) = given_back
    assert op.process == "app-0"
    assert op.outcome is Outcome.ALLOWED
    assert op.complete is not None
    assert op.refund is not None
    assert op.complete <= op.refund[0] <= (op.refund[1] or 0.0)
    assert verdict.kinds == {"over-admission"}
    assert any("given back" in step.reply for step in result.trace)


def test_a_give_back_in_one_script_leaves_room_for_exactly_one_more(
    redis_server: RedisServer,
) -> None:
    correct = replace(setup(redis_server.url, "fixed-window-lua", POLICY), give_backs=GIVE_BACKS)
    # every other request is given back (app-0's first, app-1's second): four are admitted
    # under a limit of 2, and the fifth is refused
    schedule = steps(0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1)
    result, verdict = run_schedule(correct, schedule)
    outcomes = [op.outcome for op in result.history]
    assert outcomes == [Outcome.ALLOWED] * 4 + [Outcome.REJECTED]
    assert [op.refund is not None for op in result.history] == [True, False, True, False, False]
    assert verdict.valid, verdict.to_json()


def test_give_back_needs_a_limiter_that_can(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["race", "--limiter", "fixed-window-incr-expire", "--policy", POLICY, "--give-back"]
    assert main(args) == 2
    assert "fixed-window-incr-expire has no refund" in capsys.readouterr().err


LINE_PROGRAM = f"exec:{sys.executable} -m ratelimit_harness.limiters.line_program"


@pytest.mark.parametrize(
    ("limiter", "status", "found"),
    [("fixed-window-refund-get-set", 1, "over-admission"), ("fixed-window-lua", 0, "no violation")],
)
def test_a_program_gives_back_on_the_line_protocol(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    limiter: str,
    *,
    status: int,
    found: str,
) -> None:
    args = ["race", "--limiter", f"{LINE_PROGRAM} {limiter}", "--policy", POLICY, "--give-back"]
    # on a Redis of the race's own (its clock follows the schedule), as a user's race runs
    args += ["--redis", "embedded", "--nemesis", "none", "--seed", "1", "--max-examples", "150"]
    args += ["--trace", str(tmp_path / "trace.json")]
    assert main(args) == status
    out = capsys.readouterr().out
    assert found in out
    assert "given back" in out or status == 0
