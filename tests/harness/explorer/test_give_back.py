"""Races where admitted requests are given back (``refund``): the history records each
give-back, and the lost update of a give-back in two round trips is found."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ratelimit_harness.harness.cli import main
from ratelimit_harness.harness.explorer.run import run_schedule
from ratelimit_harness.harness.explorer.schedules import GIVE_BACKS
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


@pytest.mark.parametrize(
    ("limiter", "message"),
    [
        ("exec:true", "a program cannot give a request back"),
        ("fixed-window-incr-expire", "fixed-window-incr-expire has no refund"),
    ],
)
def test_give_back_needs_a_limiter_that_can(
    limiter: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["race", "--limiter", limiter, "--policy", POLICY, "--give-back"]
    assert main(args) == 2
    assert message in capsys.readouterr().err
