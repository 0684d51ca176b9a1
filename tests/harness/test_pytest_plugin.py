"""The pytest plugin's ``race`` fixture (loaded here through its entry point, as in a user's
suite): factory objects, and the options it maps onto the explorer or refuses."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from harness.explorer.campaign import RACE_POLICIES
from harness.pytest_plugin import RaceResult, _space
from limiters import Policy

FIXED = RACE_POLICIES["fixed-window"]


def test_nemesis_names_the_faults_a_schedule_may_draw() -> None:
    policy = Policy.parse(FIXED)
    assert _space(policy, None, None).nemeses == ("advance", "crash", "skew")
    assert _space(policy, "crash,skew", None).nemeses == ("crash", "skew")
    assert _space(policy, ["advance"], None).nemeses == ("advance",)
    assert _space(policy, "none", None).nemeses == ()
    with pytest.raises(ValueError, match="unknown nemesis partition"):
        _space(policy, "crash,partition", None)


def test_max_skew_bounds_the_skews_drawn_or_refuses_a_bound_none_fits() -> None:
    policy = Policy.parse(FIXED)  # skews of 10 s and 5 s, either way
    assert _space(policy, None, 0).nemeses == ("advance", "crash")
    assert _space(policy, None, 5).skews(policy) == [5, -5]
    assert _space(policy, None, 60).skews(policy) == [10, -10, 5, -5]
    with pytest.raises(ValueError, match=r"skews of 10, 5 s either way"):
        _space(policy, None, 0.5)
    assert _space(policy, "crash", 0.5).nemeses == ("crash",)  # no skew drawn: nothing to bound
    with pytest.raises(ValueError, match="0 or more"):
        _space(policy, None, -1)


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
    # its immortal key needs the request cut between INCR and EXPIRE: the sweep crashes it
    with_crash = race("fixed-window-incr-expire", FIXED, flaw="immortal-key", nemesis="crash")
    assert with_crash.flaws == {"immortal-key"}, with_crash
    assert "app-0  t=1800000000.000  crashes" in with_crash.trace
    assert with_crash.exploration.stage == "sweep"
    # without crashes the sweep has nothing to try; a schedule that ends between the two
    # commands still cuts the request (it stays unknown), and that is what the search finds
    without = race("fixed-window-incr-expire", FIXED, flaw="immortal-key", nemesis="advance")
    assert without.flaws == {"immortal-key"}, without
    assert without.exploration.stage == "search"
    assert "crashes" not in without.trace
    assert "schedule ends: never sends EXPIRE" in without.trace


@pytest.mark.integration
def test_a_clean_result_says_how_much_was_searched(race: Callable[..., RaceResult]) -> None:
    result = race("fixed-window-lua", FIXED, max_examples=20, seed=1)
    assert result.clean, result
    assert result.trace == ""
    assert repr(result) == (
        f"fixed-window-lua with {FIXED}: no violation in {result.exploration.examples} schedules"
    )
