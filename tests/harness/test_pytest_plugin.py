"""The pytest plugin's ``race`` fixture (loaded here through its entry point, as in a user's
suite): factory objects, and the options it maps onto the explorer or refuses."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ratelimit_harness.harness.errors import BadArgument
from ratelimit_harness.harness.explorer.campaign import RACE_POLICIES
from ratelimit_harness.harness.explorer.search.drawing import space_for
from ratelimit_harness.harness.pytest_plugin import RaceResult
from ratelimit_harness.limiters import Policy

FIXED = RACE_POLICIES["fixed-window"]


def test_nemesis_names_the_faults_a_schedule_may_draw() -> None:
    assert space_for(None, None).nemeses == ("crash", "stall", "skew")
    assert space_for("crash,skew", None).nemeses == ("crash", "skew")
    assert space_for(["stall"], None).nemeses == ("stall",)
    assert space_for("none", None).nemeses == ()
    with pytest.raises(BadArgument, match="unknown nemesis partition"):
        space_for("crash,partition", None)
    with pytest.raises(BadArgument, match="time passing between requests is always drawn"):
        space_for("advance", None)


def test_max_skew_bounds_the_skews_drawn() -> None:
    policy = Policy.parse(FIXED)  # skews of 10 s and 5 s, either way
    assert space_for(None, 0).nemeses == ("crash", "stall")
    assert space_for(None, 5).skews(policy) == [5, -5]
    assert space_for(None, 60).skews(policy) == [10, -10, 5, -5]
    assert space_for(None, 0.5).skews(policy) == [0.5, -0.5]
    with pytest.raises(BadArgument, match="0 or more"):
        space_for(None, -1)


@pytest.mark.integration
def test_a_factory_object_is_raced_and_its_trace_shown(race: Callable[..., RaceResult]) -> None:
    def get_then_set(client: Any, policy: Policy) -> Callable[[str], bool]:
        def check(identity: str) -> bool:
            count = int(client.get(f"mine:{identity}") or 0)
            if count >= (policy.limit or 0):
                return False
            client.set(f"mine:{identity}", count + 1, ex=int(policy.window or 1))
            return True

        return check

    result = race(get_then_set, FIXED, max_examples=50)
    assert not result.clean
    assert "over-admission" in result.flaws
    assert "GET mine:user:1" in result.trace
    assert repr(result).startswith("get_then_set with fixed-window:limit=1,window=10: ")
    assert result.trace in repr(result)


@pytest.mark.integration
def test_a_fault_left_out_of_nemesis_is_never_drawn(race: Callable[..., RaceResult]) -> None:
    # its immortal key needs the request cut between INCR and EXPIRE: the bounded stage crashes it
    with_crash = race("fixed-window-incr-expire", FIXED, flaw="immortal-key", nemesis="crash")
    assert with_crash.flaws == {"immortal-key"}, with_crash
    # the request ends between the two: a crash, or the schedule's end before EXPIRE is sent
    assert "never sends EXPIRE" in with_crash.trace or "crashes" in with_crash.trace
    assert with_crash.exploration.stage == "bounded"
    assert with_crash.faults == {"crash"}
    # without crashes no request is cut short, not even by the schedule's end: the key
    # always gets its TTL
    # (a search for one flaw may draw ten times the profile's schedules: 300 are enough here)
    without = race(
        "fixed-window-incr-expire", FIXED, flaw="immortal-key", nemesis="stall", max_examples=300
    )
    assert without.clean, without


@pytest.mark.integration
def test_a_clean_result_says_how_much_was_searched(race: Callable[..., RaceResult]) -> None:
    result = race("fixed-window-lua", FIXED, max_examples=20, seed=1)
    assert result.clean, result
    assert result.trace == ""
    assert result.exploration.examples == 40  # 20 of the bounded stage, 20 drawn
    assert result.covered.startswith("2 instances x 2 requests on one identity, at most 2 switch")
    assert re.search(r"; then 20 random schedules \(seed \d+\)$", result.covered)
    assert repr(result) == (
        f"fixed-window-lua with {FIXED}: no violation in 40 schedules; explored {result.covered}"
    )


@pytest.mark.integration
def test_a_program_is_raced_by_its_exec_name(race: Callable[..., RaceResult]) -> None:
    program = Path(__file__).parents[1] / "limiters" / "programs" / "get_set.py"
    result = race(f"exec:{sys.executable} {program}", FIXED, nemesis="none", max_examples=50)
    assert result.flaws == {"over-admission"}  # the first find: both instances GET nil
    assert "GET ratelimit:{user:1}:get-set -> nil" in result.trace


@pytest.mark.integration
def test_a_program_is_raced_by_its_command(race: Callable[..., RaceResult]) -> None:
    program = Path(__file__).parents[1] / "limiters" / "programs" / "get_set.py"
    result = race(exec=f"{sys.executable} {program}", policy=FIXED, nemesis="none", max_examples=50)
    assert result.flaws == {"over-admission"}
    with pytest.raises(TypeError, match="race\\(exec=COMMAND, policy=SPEC\\)"):
        race("naive-get-set", FIXED, exec="node x.js")


@pytest.mark.integration
def test_give_back_races_a_limiter_s_refund(race: Callable[..., RaceResult]) -> None:
    policy = "fixed-window:limit=2,window=10"
    without = race("fixed-window-refund-get-set", policy, nemesis="none", max_examples=100)
    assert without.clean  # its check is fixed-window-lua's: only its give-back races
    given = race("fixed-window-refund-get-set", policy, nemesis="none", give_back=True)
    assert given.flaws == {"over-admission"}, given
    assert "given back" in given.trace
