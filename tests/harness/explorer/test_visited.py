"""States the bounded stage reached: a schedule that reaches one again stops there, and nothing
it would have shown is lost."""

from __future__ import annotations

from collections.abc import Sequence
from unittest import mock

import pytest
import redis

from ratelimit_harness.harness.checkers import check
from ratelimit_harness.harness.explorer.schedule.actions import Action, Through
from ratelimit_harness.harness.explorer.schedule.run import Run, RunResult, Setup, scheduled
from ratelimit_harness.harness.explorer.search import bounded, visited
from ratelimit_harness.harness.explorer.search.visited import Place, Visited
from ratelimit_harness.harness.provision import RedisServer
from ratelimit_harness.limiters import Policy

FIXED = Policy.parse("fixed-window:limit=2,window=10")


def test_a_state_is_reached_again_only_at_no_less_cost_in_each() -> None:
    seen = Visited(symmetric=True)
    place = Place((1, 1), 0, False)
    with mock.patch.object(visited, "_state", return_value="one state"):
        assert not seen.again(mock.Mock(), place, (1, 0, 0))  # the first time
        assert seen.again(mock.Mock(), place, (1, 0, 0))
        assert seen.again(mock.Mock(), place, (2, 1, 1))  # it cost more: nothing new
        # a time move left where a switch was spent: what is left to spend differs
        assert not seen.again(mock.Mock(), place, (0, 0, 1))
        assert seen.again(mock.Mock(), place, (0, 1, 1))
    seen.off = True  # a client the explorer cannot see: nothing is known
    with mock.patch.object(visited, "_state", return_value="one state"):
        assert not seen.again(mock.Mock(), place, (5, 5, 5))


@pytest.mark.integration
def test_two_instances_swapped_are_one_state(virtual_server: RedisServer) -> None:
    setup = Setup(
        "fixed-window-lua", FIXED, 2, virtual_server.url, clock_file=virtual_server.clock_file
    )
    ab, ba = (
        [Through(0, "user:1"), Through(1, "user:1")],
        [Through(1, "user:1"), Through(0, "user:1")],
    )
    one = _state_after(setup, ab, symmetric=True)
    assert one is not None
    # instance 0 was told 1 and instance 1 was told 2, or the other way
    assert _state_after(setup, ba, symmetric=True) == one
    assert _state_after(setup, ab, symmetric=False) != _state_after(setup, ba, symmetric=False)
    # a third request makes it another state: the counter, and what the history holds
    more = [Through(0, "user:1"), Through(1, "user:1"), Through(0, "user:1")]
    assert _state_after(setup, more, symmetric=True) != one


@pytest.mark.integration
def test_no_state_is_known_on_a_server_that_keeps_real_time(redis_server: RedisServer) -> None:
    setup = Setup("fixed-window-lua", FIXED, 2, redis_server.url)
    assert _state_after(setup, [Through(0, "user:1")], symmetric=True) is None


@pytest.mark.slow
@pytest.mark.integration
def test_a_bound_with_states_merged_shows_every_outcome_it_showed_without(
    virtual_server: RedisServer,
) -> None:
    # the GET-then-SET limiter: every outcome of every schedule within the bound, told apart
    # only by what the checker reads, is still shown when schedules stop at states seen before
    setup = Setup(
        "naive-get-set", FIXED, 2, virtual_server.url, clock_file=virtual_server.clock_file
    )
    bound = bounded.Bound(requests=2, time_moves=0)
    merged_runs: list[RunResult] = []
    merged = _exhaust(setup, virtual_server, bound, merged_runs)
    plain_runs: list[RunResult] = []
    with mock.patch.object(Visited, "again", return_value=False):
        plain = _exhaust(setup, virtual_server, bound, plain_runs)
    assert merged.complete
    assert plain.complete
    assert merged.merged > 0 == plain.merged
    assert merged.schedules < plain.schedules
    assert {_outcome(r) for r in plain_runs} <= {_outcome(r) for r in merged_runs}
    kinds = _kinds(plain_runs)
    assert kinds  # it over-admits
    assert kinds == _kinds(merged_runs)


def _state_after(setup: Setup, actions: Sequence[Action], symmetric: bool) -> str | None:
    admin = redis.Redis.from_url(setup.url)
    with scheduled():
        run = Run(setup, admin)
        try:
            for action in actions:
                run.apply(action)
            started = tuple(
                sum(isinstance(a, Through) and a.instance == n for a in actions) for n in range(2)
            )
            last = actions[-1].instance if isinstance(actions[-1], Through) else -1
            return visited._state(run, Place(started, last, False), symmetric)
        finally:
            run.finish()
            admin.close()


def _exhaust(
    setup: Setup, server: RedisServer, bound: bounded.Bound, runs: list[RunResult]
) -> bounded.Coverage:
    def keep(outcome: RunResult) -> bool:
        runs.append(outcome)
        return False

    admin = redis.Redis.from_url(server.url)
    try:
        with scheduled():
            return bounded.search(lambda: Run(setup, admin), setup.policy, bound, keep, 20_000)
    finally:
        admin.close()


def _kinds(runs: list[RunResult]) -> set[str]:
    return set().union(*(check(r.history, FIXED, r.ttls).kinds for r in runs))


def _outcome(run: RunResult) -> tuple[object, ...]:
    """What the checker reads of a run: its operations (not who made them) and the keys'
    TTLs."""
    operations = sorted(repr(op[1:]) for op in run.history)
    return (tuple(operations), tuple(sorted(run.ttls.items())))
