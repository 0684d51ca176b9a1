"""Never destroy data the harness did not make: a given Redis that is not empty is refused
unless ``--flush``; on one that is empty, runs remove only the keys they made."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import redis

from ratelimit_harness.harness import rundir
from ratelimit_harness.harness.cli import main
from ratelimit_harness.harness.explorer.campaign import run_row, targets
from ratelimit_harness.harness.explorer.schedule.actions import Crash, Through
from ratelimit_harness.harness.explorer.schedule.run import run_schedule
from ratelimit_harness.harness.explorer.server.keyspace import NotEmpty, claim
from ratelimit_harness.harness.explorer.stress import stress
from ratelimit_harness.harness.explorer.trace import save
from ratelimit_harness.harness.provision import RedisServer
from tests.harness.explorer.schedules import setup, steps

pytestmark = pytest.mark.integration
FIXED = "fixed-window:limit=1,window=10"
THROUGH = Through(0, "user:1")  # one whole request
PLANTED = {b"app:session:7": b"alice", b"app:cart:7": b"3 items"}


@pytest.fixture
def planted(client: redis.Redis) -> redis.Redis:
    """The test's Redis holding someone else's data."""
    client.mset(PLANTED)
    return client


def _race(url: str, tmp_path: Path, *extra: str) -> list[str]:
    trace = str(tmp_path / "trace.json")
    return ["race", "--limiter", "naive-get-set", "--seed", "1", "--max-examples", "10",
            "--redis-url", url, "--trace", trace, *extra]  # fmt: skip


def _refused(args: list[str], planted: redis.Redis, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(args) == 2
    *notes, error = capsys.readouterr().err.strip().splitlines()
    assert all(note.startswith("note: ") for note in notes)  # and no traceback
    assert error.startswith("error: the Redis at ")
    assert "holds 2 keys the harness did not make" in error
    assert "--flush" in error
    assert {key: planted.get(key) for key in PLANTED} == PLANTED
    assert planted.dbsize() == len(PLANTED)


def test_race_on_a_given_redis_that_is_not_empty_is_refused_and_its_keys_survive(
    redis_server: RedisServer,
    planted: redis.Redis,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _refused(_race(redis_server.url, tmp_path), planted, capsys)
    assert not (tmp_path / "trace.json").exists()


def test_race_test_on_a_given_redis_that_is_not_empty_is_refused(
    redis_server: RedisServer,
    planted: redis.Redis,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(rundir, "RUNS", tmp_path / "runs")
    _refused(["race-test", "--redis-url", redis_server.url], planted, capsys)
    assert not (tmp_path / "runs").exists()  # refused before it made anything


def test_replay_on_a_given_redis_that_is_not_empty_is_refused(
    redis_server: RedisServer,
    client: redis.Redis,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    racy, trace = setup(redis_server.url, "naive-get-set", FIXED), tmp_path / "trace.json"
    save(trace, racy, *run_schedule(racy, steps(0, 0, 1, 1, 0, 1)))
    client.flushdb()
    client.mset(PLANTED)
    _refused(["replay", str(trace), "--redis-url", redis_server.url], client, capsys)


def test_with_flush_the_race_proceeds_on_a_given_redis(
    redis_server: RedisServer, planted: redis.Redis, tmp_path: Path
) -> None:
    assert main(_race(redis_server.url, tmp_path, "--flush")) == 1  # the race is found
    assert not any(planted.exists(key) for key in PLANTED)
    assert (tmp_path / "trace.json").exists()


def test_on_an_empty_given_redis_the_race_runs_and_leaves_nothing(
    redis_server: RedisServer, client: redis.Redis, tmp_path: Path
) -> None:
    assert main(_race(redis_server.url, tmp_path)) == 1
    assert main(["replay", str(tmp_path / "trace.json"), "--redis-url", redis_server.url]) == 1
    assert client.dbsize() == 0  # every run deleted the keys it made


def test_a_run_without_flush_removes_its_own_keys_and_leaves_the_others(
    redis_server: RedisServer, planted: redis.Redis
) -> None:
    given = replace(setup(redis_server.url, "fixed-window-incr-expire", FIXED), flush=False)
    result, verdict = run_schedule(given, [*steps(0, 0), Crash(0)])
    # the limiter's key was there at the end (judged immortal), then removed; the planted
    # keys were neither judged nor touched
    assert verdict.kinds == {"immortal-key"}
    (made,) = result.ttls
    assert made.startswith("ratelimit:{user:1}")
    assert not planted.exists(made)
    assert {key: planted.get(key) for key in PLANTED} == PLANTED
    assert planted.dbsize() == len(PLANTED)


def test_a_redis_the_harness_started_is_flushed_between_schedules(
    redis_server: RedisServer, planted: redis.Redis
) -> None:
    assert claim(redis_server, flush=False)  # the fixture's Redis was started by the harness
    result, verdict = run_schedule(setup(redis_server.url, "naive-get-set", FIXED), [THROUGH])
    assert not any(planted.exists(key) for key in PLANTED)
    # it ran on a flushed database: its own key is all there is
    assert list(result.ttls) == ["ratelimit:{user:1}:naive-get-set:limit=1,window=10"]
    assert verdict.valid
    assert planted.dbsize() == 1  # and a flushed Redis keeps the last run's keys, as before


@pytest.mark.realtime
def test_stress_without_flush_leaves_the_others_keys(
    redis_server: RedisServer, planted: redis.Redis
) -> None:
    given = replace(setup(redis_server.url, "fixed-window-lua", FIXED), flush=False)
    verdict = stress(given, 0.2)
    assert verdict.valid
    assert {key: planted.get(key) for key in PLANTED} == PLANTED
    assert planted.dbsize() == len(PLANTED)


def test_claim_refuses_only_a_given_database_that_holds_keys(
    redis_server: RedisServer, planted: redis.Redis
) -> None:
    given = RedisServer(redis_server.url, "url", "given URL")
    with pytest.raises(NotEmpty, match="holds 2 keys"):
        claim(given, flush=False)
    assert claim(given, flush=True)  # told to: runs flush it
    assert planted.dbsize() == len(PLANTED)  # ... when they start, not here
    planted.flushdb()
    assert not claim(given, flush=False)  # empty: runs remove their own keys only


def test_a_race_test_row_on_an_empty_given_redis_leaves_the_others_keys(
    redis_server: RedisServer, planted: redis.Redis, tmp_path: Path
) -> None:
    (target,) = [t for t in targets() if t.label == "naive-get-set"]
    row = run_row(
        target, url=redis_server.url, flush=False, instances=2, max_examples=20, seed=1,
        out_dir=tmp_path, on_example=lambda _: None, stress_seconds=0.2,
    )  # fmt: skip
    assert row.matches  # searched, saved, replayed, stressed: all without flushing
    assert {key: planted.get(key) for key in PLANTED} == PLANTED
    assert planted.dbsize() == len(PLANTED)
