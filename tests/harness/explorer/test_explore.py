"""The search finds the chapter's races, shrinks them, and the saved trace replays."""

from pathlib import Path
from typing import Any

import pytest

from ratelimit_harness.harness.explorer.schedule.run import RunResult, Setup
from ratelimit_harness.harness.explorer.search import explore as explore_module
from ratelimit_harness.harness.explorer.search.drawing import Space
from ratelimit_harness.harness.explorer.search.explore import derived_seed, explore
from ratelimit_harness.harness.explorer.stress import stress
from ratelimit_harness.harness.explorer.trace import load, replay, save
from ratelimit_harness.harness.provision import RedisServer
from ratelimit_harness.limiters import Policy

pytestmark = pytest.mark.integration
FIXED = Policy.parse("fixed-window:limit=1,window=10")


def test_finds_and_shrinks_the_get_set_race_and_the_trace_replays(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    setup = Setup("naive-get-set", FIXED, 2, redis_server.url)
    found = explore(setup, wanted=lambda v: "over-admission" in v.kinds, max_examples=400, seed=3)
    assert found.found is not None
    assert found.verdict is not None
    assert "over-admission" in found.kinds
    commands = [line for line in found.found.trace if line.what.split()[0] in ("GET", "SET")]
    assert len(commands) == 4  # GET, GET, SET, SET: the shortest schedule that breaks it
    path = tmp_path / "trace.json"
    save(path, setup, found.found, found.verdict)
    again, verdict = replay(load(path), redis_server.url)
    assert "over-admission" in verdict.kinds
    assert [line.what for line in again.trace] == [line.what for line in found.found.trace]


def test_a_correct_limiter_is_not_accused(redis_server: RedisServer) -> None:
    found = explore(Setup("fixed-window-lua", FIXED, 2, redis_server.url), max_examples=90, seed=5)
    assert found.found is None
    assert found.examples - found.bounded_runs == 90
    assert found.coverage is not None
    assert found.bounded_runs == found.coverage.schedules <= 90


def test_a_search_drawing_what_one_drew_whole_before_judges_those_schedules_again_unrun(
    redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A search for another kind of flaw, with the same setup, faults, seed and budget, would
    draw the same schedules: it judges the earlier outcomes. Another seed draws anew."""
    setup = Setup("fixed-window-lua", FIXED, 2, redis_server.url)
    first = explore(setup, max_examples=30, seed=7)
    drawn: list[object] = []
    real = explore_module._drawn

    def counted(*args: Any) -> RunResult:
        drawn.append(args)
        return real(*args)

    monkeypatch.setattr(explore_module, "_drawn", counted)
    again = explore(setup, wanted=lambda v: "immortal-key" in v.kinds, max_examples=30, seed=7)
    assert drawn == []
    assert again.found is None
    assert again.examples == first.examples
    other = explore(setup, max_examples=30, seed=8)
    # (a draw Hypothesis cuts short, too long for its buffer, is no example)
    assert len(drawn) >= other.examples - other.bounded_runs > 0


def test_a_limiter_that_retries_is_not_accused_across_schedules(redis_server: RedisServer) -> None:
    """WATCH/MULTI retries whenever another instance got in between: many schedules end with
    it starved, its request unknown, and none accuses it. (Its window comes from the client's
    clock, so clock skew, which would break it, is left out.)"""
    setup = Setup("tests.limiters.sample_plugin:watch_retry", FIXED, 2, redis_server.url)
    space = Space(nemeses=("stall", "crash"))
    found = explore(setup, space=space, max_examples=200, seed=2)
    assert found.found is None


def test_schedules_on_two_keys_show_a_key_that_two_identities_share(
    redis_server: RedisServer,
) -> None:
    setup = Setup("tests.limiters.sample_plugin:one_key_for_all", FIXED, 2, redis_server.url)
    found = explore(setup, wanted=lambda v: "collision" in v.kinds, max_examples=200, seed=1)
    assert found.found is not None
    assert {op.key for op in found.found.history} == {"user:1", "user:2"}


@pytest.mark.realtime
def test_naive_stress_is_judged_by_the_same_checkers(redis_server: RedisServer) -> None:
    """Threads hammering with real clocks: per-process counters show at once; a correct
    limiter, the leaky bucket with its queued departures included, stays clean."""
    in_memory = stress(Setup("in-memory", FIXED, 2, redis_server.url), seconds=0.3)
    assert in_memory.kinds == {"over-admission"}
    leaky = Policy.parse("leaky-bucket:rate=20,capacity=2")
    assert stress(Setup("leaky-bucket", leaky, 2, redis_server.url), seconds=0.3).valid


def test_unseeded_the_same_search_draws_the_same_schedules(redis_server: RedisServer) -> None:
    """Without a seed, the random stage's is derived from the setup: the same command gives
    the same verdict on every run, and another policy draws other schedules."""
    setup = Setup("fixed-window-lua", FIXED, 2, redis_server.url)
    first, second = (explore(setup, max_examples=25) for _ in range(2))
    assert first.seed is not None
    assert first.seed == second.seed
    assert first.decisions == second.decisions
    assert f"then 25 random schedules (seed {first.seed})" in first.covered
    other = Setup("fixed-window-lua", Policy.parse("fixed-window:limit=2,window=10"), 2, "")
    assert derived_seed(other, Space()) != derived_seed(setup, Space())


def test_what_a_find_is_tried_without_smallest_first() -> None:
    every = frozenset({"crash", "stall", "skew"})
    removals = explore_module._removals
    # one fault: only a find with none could take its place, and the search with none asks that
    assert removals(frozenset({"crash"}), every, frozenset()) == [every]
    # two: with none, then without each in turn
    assert removals(frozenset({"crash", "stall"}), every, frozenset()) == [
        every,
        frozenset({"crash"}),
        frozenset({"stall"}),
    ]


def test_the_search_with_no_fault_draws_at_random_too() -> None:
    # a flaw that needs no fault but time moves past the bounded stage's reach (the boundary
    # attack's) shows at random: the search with none draws some, as each other search does
    assert explore_module._need_budget(True, 300) == (60, 150)
    assert explore_module._need_budget(False, 300) == (60, 60)
    assert explore_module._need_budget(True, 30) == (10, 15)


def test_what_a_search_covered_counts_the_schedules_run_for_what_a_flaw_needs_apart() -> None:
    setup = Setup("fixed-window-lua", FIXED, 2, "")
    # a flaw the bounded stage found, then searches for what it needs: no random stage ran
    found = explore_module.Exploration(setup, examples=131, need_runs=131)
    assert found.covered == "then 131 to find what the flaw needs"
    drawn = explore_module.Exploration(setup, examples=100, need_runs=40, seed=7)
    assert drawn.covered == "then 60 random schedules (seed 7); then 40 to find what the flaw needs"
    assert explore_module.Exploration(setup, examples=0).covered == "then 0 random schedules"
