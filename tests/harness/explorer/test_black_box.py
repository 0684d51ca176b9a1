"""The explorer judges limiters it did not write as truly as its own: scripts on the server's
clock that name their keys themselves, clients of their own, threads of their own, real
libraries (black_box.py). Every race here runs on a server on virtual time."""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from ratelimit_harness.harness.explorer.schedule.actions import Action, Advance, Through
from ratelimit_harness.harness.explorer.schedule.run import RunResult, Setup, run_schedule
from ratelimit_harness.harness.explorer.search.drawing import space_for
from ratelimit_harness.harness.explorer.search.explore import Exploration, explore
from ratelimit_harness.harness.provision import RedisServer
from ratelimit_harness.limiters import Policy

pytestmark = pytest.mark.integration
BOX = "tests.harness.explorer.black_box"
FIXED = "fixed-window:limit=2,window=10"


def _setup(server: RedisServer, plugin: str, spec: str = FIXED) -> Setup:
    return Setup(f"{BOX}:{plugin}", Policy.parse(spec), 2, server.url, clock_file=server.clock_file)


def _race(
    server: RedisServer, plugin: str, *, spec: str = FIXED, nemesis: str | None = None
) -> Exploration:
    space = space_for(nemesis, None)
    return explore(_setup(server, plugin, spec), space=space, max_examples=120, seed=3)


def _run(server: RedisServer, plugin: str, actions: Iterable[Action]) -> RunResult:
    return run_schedule(_setup(server, plugin), list(actions))[0]


def _said(result: RunResult) -> list[str]:
    return [f"{line.lane} {line.what} -> {line.reply}" for line in result.trace]


def test_the_server_keeps_the_explorers_time(virtual_server: RedisServer) -> None:
    # three requests in two windows, on a script that reads TIME and names its key from it:
    # the first window's key has expired, the last one's lives exactly to its window's end
    whole: list[Action] = [Through(0, "user:1"), Advance(10), Through(0, "user:1"), Advance(13.25)]
    result = _run(virtual_server, "server_time_window", [*whole, Through(1, "user:1")])
    assert [op.outcome.value for op in result.history] == ["allowed"] * 3
    key = "app:rl:{user:1}:180000002"  # 1800000023.25 s, in windows of 10 s
    assert result.ttls == {key: pytest.approx(6.75)}


def test_a_script_on_the_servers_clock_naming_its_own_key_is_clean(
    virtual_server: RedisServer,
) -> None:
    found = _race(virtual_server, "server_time_window")
    assert found.found is None, found.verdict
    assert found.decisions > 0


def test_a_key_that_expires_before_its_window_ends_is_caught_once_time_passes(
    virtual_server: RedisServer,
) -> None:
    found = _race(virtual_server, "short_lived_window")
    assert found.found is not None
    assert found.kinds == {"over-admission"}
    assert found.faults == set()  # time passing between requests is enough
    assert any(isinstance(action, Advance) for action in found.found.actions)


FIRST = "fixed-window:limit=2,window=10,anchor=first"


def test_a_window_started_by_its_first_hit_is_clean_judged_as_such(
    virtual_server: RedisServer,
) -> None:
    """A key's TTL as the window: refusals at the very millisecond it ends are its convention;
    judged by aligned windows the same limiter refuses wrongly."""
    found = _race(virtual_server, "first_hit_window", spec=FIRST)
    assert found.found is None, found.verdict
    assert found.decisions > 0
    aligned = _race(virtual_server, "first_hit_window")
    assert aligned.found is not None


def test_a_first_hit_window_whose_key_lives_half_a_window_is_caught(
    virtual_server: RedisServer,
) -> None:
    found = _race(virtual_server, "short_first_hit_window", spec=FIRST)
    assert found.found is not None
    assert found.kinds == {"over-admission"}


@pytest.mark.parametrize("plugin", ["own_client_on_the_pool", "own_client_from_the_url"])
def test_a_client_of_the_limiters_own_is_scheduled_like_the_given_one(
    virtual_server: RedisServer, plugin: str
) -> None:
    said = _said(_run(virtual_server, plugin, [Through(0, "user:1"), Through(1, "user:1")]))
    assert sum(line.startswith("app-0 EVALSHA") for line in said) == 1
    assert sum(line.startswith("app-1 EVALSHA") for line in said) == 1
    assert _race(virtual_server, plugin).found is None


def test_a_thread_the_limiter_starts_is_its_instances_actor_and_never_ends_the_run(
    virtual_server: RedisServer,
) -> None:
    """It waits 1 ms, then sends TIME, for ever: as each instance's actor, on virtual time, it
    sends TIME once, after time passed (see background), never unscheduled."""
    busy = [Through(n % 2, "user:1") for n in range(6)]
    result = _run(virtual_server, "with_a_thread_of_its_own", [*busy, Advance(1)])
    said = _said(result)
    assert sum(line.startswith("app-0~keep-alive TIME") for line in said) == 1, said
    assert sum(line.startswith("app-1~keep-alive TIME") for line in said) == 1, said
    assert result.unscheduled == 0
    assert _race(virtual_server, "with_a_thread_of_its_own").found is None


def test_a_transaction_on_client_clocks_breaks_only_when_the_clocks_do(
    virtual_server: RedisServer,
) -> None:
    assert _race(virtual_server, "watch_multi_client_clock", nemesis="crash").found is None
    skewed = _race(virtual_server, "watch_multi_client_clock")
    assert skewed.kinds == {"over-admission"}
    assert skewed.faults == {"skew"}
    assert skewed.clocks_apart < 1  # clocks a few milliseconds apart at a boundary, not a window


def test_limits_moving_window_over_admits_once_its_clock_reading_is_stale(
    virtual_server: RedisServer,
) -> None:
    pytest.importorskip("limits", reason="the compare extra (pip install -e '.[compare]')")
    # it stamps each entry with the app server's time.time(), read before the script is sent:
    # a request that stalls between the two stamps its entry a window early, and two more are
    # admitted at the window's end (5 in 10.01 s, for 2 per 10 s)
    window = "sliding-window:limit=2,window=10"
    stalled = _race(virtual_server, "limits_moving_window", spec=window, nemesis="crash,stall")
    assert stalled.kinds == {"over-admission"}, stalled.verdict
    assert stalled.faults == {"stall"}
    # and an app server whose clock is behind does the same
    setup = _setup(virtual_server, "limits_moving_window", window)
    over = lambda v: "over-admission" in v.kinds  # noqa: E731
    skewed = explore(setup, wanted=over, space=space_for("skew", None), max_examples=300, seed=3)
    assert skewed.faults == {"skew"}


def test_pyrate_limiters_leak_thread_is_an_actor_and_its_keys_never_expire(
    virtual_server: RedisServer,
) -> None:
    pytest.importorskip("pyrate_limiter", reason="the compare extra (pip install -e '.[compare]')")
    result = _run(virtual_server, "pyrate_redis_bucket", [Through(0, "user:1"), Advance(1)])
    leaks = [line for line in _said(result) if "ZREMRANGEBYSCORE pyrate" in line]
    # each instance's factory built a Limiter, and each Limiter a leaker: both leak as the run
    # begins (the 1 s that passed is not their 10 s)
    assert leaks == [
        f"app-{n}~PyrateLimiter's-Leaker ZREMRANGEBYSCORE pyrate 0 1799999990000 -> 0"
        for n in (0, 1)
    ]
    assert result.unscheduled == 0
    assert result.ttls == {"pyrate": -1.0}  # the leak thread trims it; nothing expires it
    found = _race(virtual_server, "pyrate_redis_bucket")
    assert found.found is not None
    assert "immortal-key" in found.kinds
