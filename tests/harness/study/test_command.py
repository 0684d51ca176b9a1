"""``python -m harness study``: its run directory, its report, and whose keys it touches."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis

from harness.cli import main
from harness.provision import RedisServer
from harness.study.burst import bursts
from harness.study.space import Space


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
    bursts(space, 5)
    space.close()
    assert client.keys("*") == [b"theirs"]  # ...and nothing flushed


def test_the_study_writes_its_run_and_the_report_is_rebuilt(
    redis_server: RedisServer,
    client: redis.Redis,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["study", "--quick", "--redis-url", redis_server.url]) == 0
    (run_dir,) = (tmp_path / "runs").glob("study-*")
    printed = capsys.readouterr().out
    assert f"report: {run_dir / 'report.html'}" in printed
    assert "| Sliding Window Log | sliding-log-lua | O(requests) |" in printed
    assert client.dbsize() == 0
    written = {p.name for p in run_dir.iterdir()}
    assert {"study.json", "summary.md", "report.html", "memory.png"} <= written
    (run_dir / "summary.md").unlink()
    assert main(["report", str(run_dir)]) == 0
    assert "| Fixed Window | fixed-window-lua | O(1) |" in (run_dir / "summary.md").read_text()
