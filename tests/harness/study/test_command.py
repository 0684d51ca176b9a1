"""``ratelimit-harness study``: its run directory, its report, and whose keys it touches."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis

from ratelimit_harness.harness import rundir
from ratelimit_harness.harness.cli import main
from ratelimit_harness.harness.history.snapshot import read_snapshot
from ratelimit_harness.harness.provision import RedisServer
from ratelimit_harness.harness.rundir import rejudge
from ratelimit_harness.harness.study.accuracy import LUA
from ratelimit_harness.harness.study.burst import bursts
from ratelimit_harness.harness.study.judged import Histories
from ratelimit_harness.harness.study.run import QUICK
from ratelimit_harness.harness.study.space import Space
from ratelimit_harness.harness.study.subjects import SUBJECTS


def test_a_given_redis_that_holds_keys_is_refused(
    redis_server: RedisServer, client: redis.Redis, capsys: pytest.CaptureFixture[str]
) -> None:
    client.set("theirs", 1)
    assert main(["study", "--quick", "--redis-url", redis_server.url]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()[-1:]
    assert line.startswith("error: ")
    assert "holds 1 key" in line
    assert client.get("theirs") == b"1"


def test_on_a_redis_it_started_it_still_removes_only_its_own_keys(
    redis_server: RedisServer, client: redis.Redis
) -> None:
    space = Space(redis_server)
    assert space.owned  # started by the harness: no emptiness required...
    client.set("theirs", 1)
    bursts(space, 5, Histories())
    space.close()
    assert client.keys("*") == [b"theirs"]  # ...and nothing flushed


@dataclass(frozen=True)
class QuickStudy:
    run_dir: Path
    printed: str  # what the command printed on stdout
    keys_after: int  # keys in Redis once it ended


@pytest.fixture(scope="module")
def quick_study(
    redis_server: RedisServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[QuickStudy]:
    """One ``study --quick`` on an emptied Redis, for the tests of what it wrote."""
    runs = tmp_path_factory.mktemp("study") / "runs"
    connection = redis.Redis.from_url(redis_server.url)
    connection.flushall()
    printed = io.StringIO()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(printed):
        patch.setattr(rundir, "RUNS", runs)
        assert main(["study", "--quick", "--redis-url", redis_server.url]) == 0
    (run_dir,) = runs.glob("study-*")
    yield QuickStudy(run_dir, printed.getvalue(), connection.dbsize())
    connection.close()


def test_the_study_writes_its_run_and_the_report_is_rebuilt(quick_study: QuickStudy) -> None:
    run_dir = quick_study.run_dir
    assert f"report: {run_dir / 'report.html'}" in quick_study.printed
    assert "| Sliding Window Log | sliding-log-lua | O(requests) |" in quick_study.printed
    assert quick_study.keys_after == 0
    written = {p.name for p in run_dir.iterdir()}
    assert {"manifest.json", "study.json", "summary.md", "report.html", "memory.png"} <= written
    (run_dir / "summary.md").unlink()
    assert main(["report", str(run_dir)]) == 0
    summary = (run_dir / "summary.md").read_text()
    assert "| Fixed Window | fixed-window-lua | O(1) |" in summary
    histories = len(rejudge(run_dir))
    assert f"{histories} histories, " in summary


def test_every_decision_it_made_on_redis_is_judged_again_as_recorded(
    quick_study: QuickStudy, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = quick_study.run_dir
    found = {again.name: again for again in rejudge(run_dir)}
    limiters = [subject.limiter for subject in SUBJECTS]
    # every limiter in each measurement that decides on Redis; accuracy's three on Redis
    expected = {f"history/{m}/{name}" for m in ("memory", "bursts", "cost") for name in limiters}
    expected |= {f"history/accuracy/{name}" for name in LUA.values()}
    assert set(found) == expected
    policies = {s.limiter: s.policy() for s in SUBJECTS}
    policies_of_memory = {s.limiter: s.policy(max(QUICK.rates)) for s in SUBJECTS}
    prefixes = set()
    for name, again in found.items():
        assert again.same, name
        assert again.verdict.operations > 0
        _, measurement, limiter = name.split("/")
        held = policies_of_memory if measurement == "memory" else policies
        assert again.verdict.policy == str(held[limiter])
        # the keys kept are this limiter's, each with a TTL; the study removed them all after
        keys = read_snapshot(run_dir / f"{name}.keys.jsonl")
        assert keys
        assert all(f":{limiter}:" in key and ttl >= 0 for key, ttl in keys.items())
        prefixes |= {key.split(":")[0] for key in keys}
    assert len(prefixes) == 1  # the run's own
    assert quick_study.keys_after == 0
    code = main(["check", str(run_dir)])
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == len(found)
    assert all(line.endswith("(as recorded)") for line in lines)
    assert code == (0 if all(again.verdict.valid for again in found.values()) else 1)
