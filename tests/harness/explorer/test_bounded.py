"""The bounded stage: every schedule within a bound, cheapest first, one per class of schedules
that only reorder commuting steps; its coverage said in words."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from unittest import mock

import pytest
import redis

from ratelimit_harness.harness.checkers import Verdict
from ratelimit_harness.harness.explorer.schedule.actions import Advance, Through
from ratelimit_harness.harness.explorer.schedule.run import Run, RunResult, Setup, scheduled
from ratelimit_harness.harness.explorer.search import bounded
from ratelimit_harness.harness.explorer.search import explore as explore_module
from ratelimit_harness.harness.explorer.search.explore import explore, explore_every_kind
from ratelimit_harness.harness.provision import RedisServer
from ratelimit_harness.limiters import Policy
from tests.harness.explorer.schedules import setup
from tests.limiters.js_programs import require_programs

FIXED, SLIDING = "fixed-window:limit=1,window=10", "sliding-window:limit=1,window=10"
COUNTER, BUCKET = "sliding-counter:limit=1,window=10", "token-bucket:capacity=1,rate=0.1"
FIRST = "fixed-window:limit=2,window=10,anchor=first"


def test_the_default_bound_lets_one_instance_spend_a_budget_inside_a_preemption() -> None:
    small = bounded.bound_for(Policy.parse(FIXED), 2, ["crash", "stall", "skew"])
    assert (small.instances, small.requests, small.warm) == (2, 2, (0,))
    assert (small.switches, small.faults, small.time_moves) == (2, 1, 1)
    large = bounded.bound_for(Policy.parse("fixed-window:limit=10,window=10"), 2, ["crash"])
    assert (large.requests, large.warm) == (3, (0, 9))  # up to 3; then from near the budget
    assert (large.crash, large.stall, large.skew) == (True, False, False)
    assert small.skew


def test_a_clock_jumps_just_past_the_edge_it_reads_or_back_before_its_window() -> None:
    fixed = Policy.parse(FIXED)
    assert bounded.skews(fixed, 1800000000.0) == [10.01, -0.01]  # at a window's start
    assert bounded.skews(fixed, 1800000007.5) == [2.51, -7.51]


def test_commands_commute_on_keys_apart_or_when_both_read() -> None:
    independent = bounded._independent
    assert independent(("INCR", "a"), ("INCR", "b"))
    assert independent(("GET", "a"), ("EXISTS", "a"))
    assert not independent(("GET", "a"), ("SET", "a", "1"))
    assert not independent(("INCR", "a"), ("INCR", "a"))
    assert not independent(bounded.START, ("GET", "a"))  # its first command: not known yet
    # a script that names no key may touch any
    assert not independent(("EVAL", "return 1", "0"), ("GET", "a"))


def test_coverage_says_what_was_proved_and_how_far_it_got() -> None:
    bound = bounded.Bound()
    done = bounded.Coverage(bound, schedules=1234, skipped=56, merged=7, complete=True, cost_most=4)
    assert done.describe() == (
        "every schedule of 2 instances x 2 requests on one identity, at most 2 switches, "
        "1 crash or stall, 1 time move to window edges and key deadlines "
        "(1,234 schedules, 56 equivalent ones skipped, 7 stopped at a state reached before)"
    )
    every_fault = bounded.Bound(skew=True)
    assert "at most 2 switches, 1 crash, stall or skew, 1 time move" in every_fault.describe()
    cut = bounded.Coverage(bound, schedules=300, cost_done=1, cost_most=4)
    assert (
        ": every schedule with at most 1 of these in all (of up to 4), then part of the next"
        in (cut.describe())
    )
    assert cut.to_json()["complete"] is False


@pytest.mark.integration
@pytest.mark.parametrize(
    ("limiter", "spec", "flaw", "fault"),
    [
        # read, then write: the other instance gets in between
        ("naive-get-set", FIXED, "over-admission", None),
        ("colleague", FIXED, "over-admission", None),
        ("sliding-counter-mget-incr", COUNTER, "over-admission", None),
        ("token-bucket-nonatomic", BUCKET, "over-admission", None),
        ("naive-get-set", "fixed-window:limit=3,window=10", "over-admission", None),
        # write, then its EXPIRE: the instance crashes in between
        ("fixed-window-incr-expire", FIXED, "immortal-key", "crash"),
        ("sliding-log-pipeline", SLIDING, "immortal-key", "crash"),
        ("token-bucket-nonatomic", BUCKET, "immortal-key", "crash"),
        # SET NX EX, then INCR: time passes the key's deadline in between
        ("fixed-window-setnx-incr", FIXED, "immortal-key", "stall"),
        # a window keyed by the instance's own clock: one clock jumps past the window's edge
        ("fixed-window-setnx-incr", FIXED, "over-admission", "skew"),
    ],
)
def test_the_stage_finds_the_chapters_races_each_time_alike(
    virtual_server: RedisServer, limiter: str, spec: str, flaw: str, fault: str | None
) -> None:
    counts = set()
    for seed in (1, 2):  # the stage draws nothing: a seed changes nothing in it
        explore_module._STREAMS.clear()  # run each schedule again, not read from the stream
        found = explore(
            _on(virtual_server, limiter, spec),
            wanted=lambda v: flaw in v.kinds,
            max_examples=150,
            seed=seed,
        )
        assert found.stage == "bounded"
        assert found.found is not None
        assert found.examples_to_find <= 150
        assert found.faults == ({fault} if fault else set())
        counts.add(found.examples_to_find)
    assert len(counts) == 1


@pytest.mark.integration
def test_a_one_script_limiter_is_proved_clean_within_a_bound(redis_server: RedisServer) -> None:
    script = setup(redis_server.url, "fixed-window-lua", FIXED)
    bound = bounded.Bound(faults=0)
    coverage = _exhaust(script, redis_server, bound)
    assert coverage.complete
    assert coverage.cost_done == coverage.cost_most == 3
    assert coverage.describe().startswith("every schedule of 2 instances x 2 requests")
    # at the search's budget the default bound is only partly explored, and says how far
    found = explore(script, max_examples=60, seed=1)
    assert found.coverage is not None
    assert found.coverage.schedules == found.bounded_runs == 60
    assert not found.coverage.complete
    assert "every schedule with at most 0 of these in all" in found.covered


@pytest.mark.integration
def test_steps_on_keys_apart_are_taken_in_one_order(redis_server: RedisServer) -> None:
    # one identity an instance: when both are inside a request, their next commands touch
    # keys apart and commute, so one of the two orders is skipped
    broken = setup(redis_server.url, "naive-get-set", FIXED)
    bound = bounded.Bound(identities=("user:1", "user:2"), faults=0, time_moves=0)
    reduced = _exhaust(broken, redis_server, bound)
    with mock.patch.object(bounded, "_commute", return_value=False):
        plain = _exhaust(broken, redis_server, bound)
    assert reduced.complete
    assert plain.complete
    assert reduced.skipped > 0 == plain.skipped
    assert reduced.schedules <= plain.schedules


def _exhaust(
    what: Setup, server: RedisServer, bound: bounded.Bound, runs: list[RunResult] | None = None
) -> bounded.Coverage:
    """The bounded stage on ``what`` to the end of ``bound``, nothing counted a find."""

    def keep(outcome: RunResult) -> bool:
        if runs is not None:
            runs.append(outcome)
        return False

    with scheduled():
        admin = _admin(server)
        try:
            return bounded.search(lambda: Run(what, admin), what.policy, bound, keep, 5000)
        finally:
            admin.close()


@pytest.mark.integration
def test_time_moves_to_a_keys_deadline(redis_server: RedisServer) -> None:
    first = Setup("fixed-window-first-lua", Policy.parse(FIRST), 2, redis_server.url)
    with scheduled():
        run = Run(first, _admin(redis_server))
        try:
            run.apply(Through(0, "user:1"))
            run.apply(Advance(4.0))
            instants = bounded.instants(run, first.policy)
        finally:
            run.finish()
    # the key made at 0 s ends at 10 s: from 4 s, just before, at and just after 6 s (to a
    # few milliseconds: a Redis on real time counts the TTL down meanwhile)
    near = sorted(s for s in instants if abs(s - 6.0) < 0.02)
    assert len(near) == 3
    assert near[1] - near[0] == pytest.approx(0.01) == near[2] - near[1]
    assert 30.0 in instants  # and far past everything


def _admin(server: RedisServer) -> redis.Redis:
    return redis.Redis.from_url(server.url)


SHAPES = "tests.limiters.shapes"
PROGRAMS = Path(__file__).resolve().parents[2] / "limiters" / "programs" / "shapes"
CAS = "fixed-window:limit=10,window=10,anchor=first"
SHAPE_FLAWS = [
    # EXISTS, then INCRBY in a second round trip: the key's deadline passes in between
    ("exists_then_incrby", FIRST, "immortal-key", {"stall"}),
    # a window kept by a marker key: B spends the budget while A holds a stale read
    ("marker_window", FIRST, "over-admission", set()),
    # and A deletes B's window between B's SET NX EX and its INCR (a stall shows it sooner)
    ("marker_window", FIRST, "immortal-key", set()),
    # compare-and-set with one retry: A preempted twice, B's requests in between, at 2 of 10
    ("compare_and_set", CAS, "wrongful-rejection", set()),
]


@pytest.mark.integration
@pytest.mark.parametrize(("shape", "spec", "flaw", "needs"), SHAPE_FLAWS)
def test_shapes_of_released_code_are_caught_with_what_they_need(
    virtual_server: RedisServer, shape: str, spec: str, flaw: str, needs: set[str]
) -> None:
    # (the same on every seed: bench/verdict_agreement.py races each on ten)
    found = explore(_on(virtual_server, f"{SHAPES}:{shape}", spec), wanted=_kind(flaw))
    assert found.stage == "bounded"
    assert found.faults == needs


@pytest.mark.integration
@pytest.mark.parametrize(("shape", "spec", "flaw", "needs"), SHAPE_FLAWS)
def test_shapes_on_the_line_protocol_are_caught_as_their_python_twins(
    virtual_server: RedisServer, shape: str, spec: str, flaw: str, needs: set[str]
) -> None:
    require_programs()
    program = f"exec:node {PROGRAMS / shape.replace('_', '-')}.js"
    found = explore(_on(virtual_server, program, spec), wanted=_kind(flaw))
    assert found.stage == "bounded"
    assert found.faults == needs


def _on(server: RedisServer, limiter: str, spec: str) -> Setup:
    return Setup(limiter, Policy.parse(spec), 2, server.url, clock_file=server.clock_file)


def _kind(flaw: str) -> Callable[[Verdict], bool]:
    return lambda verdict: flaw in verdict.kinds


@pytest.mark.integration
def test_a_flaw_that_leads_to_another_is_followed_from_its_find(
    virtual_server: RedisServer,
) -> None:
    """The key exists_then_incrby leaves with no TTL refuses once its window is past: the
    search for a kind not found yet goes on from the immortal key, not from scratch."""
    setup = _on(virtual_server, f"{SHAPES}:exists_then_incrby", FIRST)
    first, second, last = explore_every_kind(setup, seed=1)
    assert first.kinds == {"immortal-key"}
    assert first.after_runs == 0
    assert "wrongful-rejection" in second.kinds
    assert second.stage == "bounded"
    assert 0 < second.examples_to_find == second.after_runs <= explore_module.AFTER_MOST
    assert last.found is None
