"""Limiters on redis.asyncio are judged as truly as synchronous ones: their commands are
scheduling points (a pipeline's one by one, MULTI/EXEC at its EXEC), seen in the trace; and a
limiter whose commands reach Redis by a client the explorer cannot see is never judged in
silence (asyncio_box.py). Every race here runs on a server on virtual time, but one on
redis-server, which logs the commands of scripts otherwise."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from ratelimit_harness.harness.cli import main
from ratelimit_harness.harness.explorer.schedule.actions import Action, Crash, Step, Through
from ratelimit_harness.harness.explorer.schedule.run import RunResult, Setup, run_schedule
from ratelimit_harness.harness.explorer.search.drawing import space_for
from ratelimit_harness.harness.explorer.search.explore import Exploration, explore
from ratelimit_harness.harness.explorer.wire.unseen import Count, countable
from ratelimit_harness.harness.provision import RedisServer
from ratelimit_harness.harness.pytest_plugin import RaceResult
from ratelimit_harness.limiters import Policy

pytestmark = pytest.mark.integration
BOX = "tests.harness.explorer.asyncio_box"
FIXED = "fixed-window:limit=1,window=10"


def _setup(server: RedisServer, plugin: str) -> Setup:
    policy = Policy.parse(FIXED)
    return Setup(f"{BOX}:{plugin}", policy, 2, server.url, clock_file=server.clock_file,
                 count_unseen=True)  # fmt: skip


def _race(server: RedisServer, plugin: str, nemesis: str | None = None) -> Exploration:
    space = space_for(nemesis, None)
    return explore(_setup(server, plugin), space=space, max_examples=120, seed=3)


def _run(server: RedisServer, plugin: str, actions: list[Action]) -> RunResult:
    return run_schedule(_setup(server, plugin), actions)[0]


def _said(result: RunResult) -> list[str]:
    return [f"{line.lane} {line.what} -> {line.reply}" for line in result.trace]


def test_an_asyncio_get_then_set_is_caught_over_admitting_with_its_commands_in_the_trace(
    virtual_server: RedisServer,
) -> None:
    found = _race(virtual_server, "get_then_set")
    assert found.found is not None
    assert "over-admission" in found.kinds
    assert found.stage == "bounded"  # the read-then-write race, between its two round trips
    said = _said(found.found)
    assert said[:2] == ["app-0 check(user:1) -> ", "app-0 GET app:aio:{user:1} -> nil"]
    assert "app-1 SET app:aio:{user:1} 1 PX 10000 -> OK" in said
    assert found.unseen == 0


@pytest.mark.parametrize("plugin", ["own_redis_asyncio", "own_valkey_asyncio"])
def test_an_asyncio_client_the_limiter_builds_itself_is_scheduled_too(
    virtual_server: RedisServer, plugin: str
) -> None:
    pytest.importorskip("valkey.asyncio")
    found = _race(virtual_server, plugin)
    assert found.found is not None
    assert "over-admission" in found.kinds
    assert "app-1 SET app:aio:{user:1} 1 PX 10000 -> OK" in _said(found.found)
    # its connections are closed with the run (else each left open warns, an error here)


def test_an_asyncio_lua_limiter_is_clean_with_every_script_scheduled(
    virtual_server: RedisServer,
) -> None:
    result = _run(virtual_server, "atomic_lua", [Through(0, "user:1"), Through(1, "user:1")])
    scripts = [line for line in _said(result) if " EVALSHA " in line]
    assert [line.split()[0] for line in scripts] == ["app-0", "app-1"]
    assert scripts[0].endswith("-> 1")
    assert scripts[1].endswith("-> 0")
    found = _race(virtual_server, "atomic_lua")
    assert found.found is None, found.verdict
    assert found.decisions > 0
    assert found.unseen == 0


def test_a_task_the_limiter_starts_when_built_is_an_actor_of_its_instance(
    virtual_server: RedisServer,
) -> None:
    """It runs at the first boundary, then sleeps 1 ms of virtual time, which never passes
    here: one TIME each, under the task's name, none inside a check."""
    busy: list[Action] = [Through(n % 2, "user:1") for n in range(8)]
    result = _run(virtual_server, "with_a_task_of_its_own", busy)
    assert result.unscheduled == 0
    times = [(line.lane, line.what) for line in result.trace if "TIME" in line.what]
    assert times == [("app-0~keep-alive", "TIME"), ("app-1~keep-alive", "TIME")]
    assert [op.outcome.value for op in result.history][:2] == ["allowed", "rejected"]
    assert _race(virtual_server, "with_a_task_of_its_own").found is None


def test_an_asyncio_pipeline_is_one_point_per_command_as_its_sync_twin(
    virtual_server: RedisServer,
) -> None:
    cut: list[Action] = [Step(0, "user:1"), Step(0, "user:1"), Crash(0)]  # after INCR
    for plugin in ("pipeline_sync", "pipeline_async"):
        result = _run(virtual_server, plugin, cut)
        assert _said(result)[1] == "app-0 INCRBY app:aio:{user:1} 1 -> 1", plugin
        assert result.ttls == {"app:aio:{user:1}": -1.0}, plugin  # its PEXPIRE never sent
    sync, asyncio = _race(virtual_server, "pipeline_sync"), _race(virtual_server, "pipeline_async")
    assert asyncio.kinds == sync.kinds == {"immortal-key"}
    assert asyncio.faults == sync.faults == {"crash"}


def test_an_asyncio_transaction_is_one_point_at_exec_and_breaks_as_its_sync_twin(
    virtual_server: RedisServer,
) -> None:
    said = _said(_run(virtual_server, "watch_multi_async", [Through(0, "user:1")]))
    key = "app:tx:{user:1}:180000000"
    assert f"app-0 MULTI INCRBY {key} 1 EXPIRE {key} 10 EXEC -> [1, 1]" in said
    assert f"app-0 WATCH {key} -> OK" in said
    assert _race(virtual_server, "watch_multi_async", nemesis="crash").found is None
    skewed = _race(virtual_server, "watch_multi_async")
    assert skewed.kinds == {"over-admission"}
    assert skewed.faults == {"skew"}  # as watch_multi_client_clock's, its synchronous twin


def test_commands_of_a_client_the_explorer_cannot_see_are_counted(
    virtual_server: RedisServer,
) -> None:
    result = _run(virtual_server, "raw_socket", [Through(0, "user:1"), Through(1, "user:1")])
    assert [line.what for line in result.trace if "EVAL" in line.what] == []  # never seen
    assert result.unseen is not None
    # each check's script: TIME, INCR, then PEXPIRE for the window's first, and the EVAL
    assert result.unseen.commands == 4 + 3
    assert result.unseen.first[:3] == ["TIME", "INCR app:rl:{user:1}:180000000",
                                       "PEXPIRE app:rl:{user:1}:180000000 10000"]  # fmt: skip
    # the explorer's own commands and a seen limiter's are never counted
    seen = _run(virtual_server, "atomic_lua", [Through(0, "user:1"), Through(1, "user:1")])
    assert seen.unseen is not None
    assert seen.unseen.commands == 0


def test_on_redis_a_scripts_own_commands_are_the_engines_and_not_counted() -> None:
    from tests.harness.support import start

    with start("embedded") as server:  # redis-server, which logs them under "?:0"; else Valkey
        assert countable(server)
        on_redis = "redis-server" in server.detail
        setup = Setup(f"{BOX}:raw_socket", Policy.parse(FIXED), 2, server.url, count_unseen=True)
        result = run_schedule(setup, [Through(0, "user:1"), Through(1, "user:1")])[0]
        seen = replace(setup, limiter=f"{BOX}:atomic_lua")
        clean = run_schedule(seen, [Through(0, "user:1"), Through(1, "user:1")])[0]
    assert result.unseen is not None
    assert clean.unseen == Count(0, [])
    if not on_redis:  # Valkey logs a script's commands under its caller, as on virtual time
        assert result.unseen.commands == 4 + 3
        return
    assert result.unseen.commands == 2  # the two EVALs
    assert result.unseen.first[0].startswith("EVAL local now = redis.call('TIME')")
    assert len(result.unseen.first[0]) == 80


def _race_args(server: RedisServer, tmp_path: Path, *extra: str) -> list[str]:
    return ["race", "--limiter", f"{BOX}:raw_socket", "--policy", FIXED, "--seed", "1",
            "--max-examples", "20", "--redis", "embedded", "--trace", str(tmp_path / "t.json"),
            "--json", str(tmp_path / "race.json"), *extra]  # fmt: skip


def test_race_ends_with_exit_2_and_the_count_when_commands_went_unseen(
    virtual_server: RedisServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_race_args(virtual_server, tmp_path)) == 2
    captured = capsys.readouterr()
    error = captured.err.strip().splitlines()[-1]
    summary = json.loads((tmp_path / "race.json").read_text())
    count = summary["unscheduled"]
    assert count > 20  # a script's worth of commands for every check
    assert error.startswith(f"error: Redis ran {count} commands for clients the explorer cannot")
    assert error.endswith(f"--allow-unscheduled judges {BOX}:raw_socket by what the explorer saw")
    assert "not judged in" in captured.out
    assert "no violation" not in captured.out
    assert summary["first_unscheduled"][0] == "TIME"
    assert summary["allow_unscheduled"] is False


def test_race_allowed_to_judges_what_it_saw_and_says_what_it_did_not(
    virtual_server: RedisServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_race_args(virtual_server, tmp_path, "--allow-unscheduled")) == 0
    out = capsys.readouterr().out
    summary = json.loads((tmp_path / "race.json").read_text())
    assert "no violation in 40 schedules" in out  # 20 of the bounded stage, 20 drawn
    assert f"unscheduled: Redis ran {summary['unscheduled']} commands" in out
    *_, said, recorded = out.rstrip().splitlines()
    assert said.endswith("judged without them")
    assert recorded.startswith("recorded in runs/race-")  # its summary, in its run directory


def test_race_on_a_given_redis_counts_nothing_and_says_so(
    virtual_server: RedisServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = _race_args(virtual_server, tmp_path)
    at = args.index("--redis")
    args[at : at + 2] = ["--redis-url", virtual_server.url, "--flush"]
    # judged on what was seen, which is nothing (and there TIME stands still: a script of its own
    # that reads it refuses wrongly, a verdict on a run the explorer did not drive)
    assert main(args) == 1
    assert "are not counted on this Redis" in capsys.readouterr().err
    assert json.loads((tmp_path / "race.json").read_text())["unscheduled"] is None


def test_race_on_a_seen_asyncio_limiter_counts_none(
    virtual_server: RedisServer, tmp_path: Path
) -> None:
    args = _race_args(virtual_server, tmp_path)
    args[args.index(f"{BOX}:raw_socket")] = f"{BOX}:atomic_lua"
    assert main(args) == 0
    assert json.loads((tmp_path / "race.json").read_text())["unscheduled"] == 0


def test_the_pytest_plugin_refuses_unseen_commands_unless_allowed(
    race: Callable[..., RaceResult], race_redis_server: RedisServer
) -> None:
    from ratelimit_harness.harness.errors import Unscheduled
    from tests.harness.explorer.asyncio_box import atomic_lua, raw_socket

    if not countable(race_redis_server):  # $REDIS_URL, a container: nothing is counted
        assert race(raw_socket, FIXED, max_examples=10).unscheduled is None
        return

    with pytest.raises(Unscheduled, match=r"raw_socket: Redis ran \d+ commands for clients"):
        race(raw_socket, FIXED, max_examples=10)
    allowed = race(raw_socket, FIXED, max_examples=10, allow_unscheduled=True)
    assert allowed.clean
    assert allowed.unscheduled is not None
    assert allowed.unscheduled > 10
    seen = race(atomic_lua, FIXED, max_examples=10)  # an async def factory object
    assert seen.clean
    assert seen.unscheduled == 0


def test_probe_runs_an_asyncio_plugin_and_closes_it(
    virtual_server: RedisServer, capsys: pytest.CaptureFixture[str]
) -> None:
    policy = "fixed-window:limit=2,window=10"
    args = ["probe", "--limiter", f"{BOX}:atomic_lua", "--policy", policy, "--requests", "3",
            "--identity", "probe:async", "--redis-url", virtual_server.url]  # fmt: skip
    assert main(args) == 0  # and no unclosed connection warns (an error here)
    allowed = [line.split()[1] for line in capsys.readouterr().out.splitlines()[2:]]
    assert allowed == ["yes", "yes", "no"]
