"""``load --service`` and ``--target``: a service of the user's own under a Locust swarm, judged
from what its clients saw and the keys it left in Redis."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from ratelimit_harness.harness.cli import main
from ratelimit_harness.harness.history.loads import LoadRecord
from ratelimit_harness.harness.load import run
from ratelimit_harness.harness.load.contract.rules import load_rules
from ratelimit_harness.harness.load.faults.nemesis import Schedule, parse_nemesis
from ratelimit_harness.harness.load.system.redis_of_run import NO_REDIS, redis_for
from ratelimit_harness.harness.load.system.service import Service
from ratelimit_harness.harness.provision import RedisServer
from ratelimit_harness.harness.provision.base import free_port
from ratelimit_harness.limiters.js_catalogue import unavailable
from ratelimit_harness.reports.load import LoadRun
from ratelimit_harness.reports.load_report import load_footer
from tests.harness.support import child_env, running_for, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.realtime]

SERVICE = Path(__file__).parent / "services" / "window_service.py"
NODE_SERVICE = Path(__file__).parents[3] / "limiters" / "js" / "service" / "server.js"
POLICY = "fixed-window:limit=5,window=1"


@pytest.fixture(autouse=True)
def runs_in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(run, "RUNS", tmp_path / "runs")


def served(server: RedisServer, service: Service, instances: int = 2) -> tuple[Path, LoadRecord]:
    """A run of ``service`` on ``server``; each test using it empties the server first (the
    ``client`` fixture), or its judge would meet an earlier test's counts."""
    rules = load_rules(None, served=True).with_default(None, POLICY)
    swarm = run.Swarm(run.locustfile_path("burst"), users=20, spawn_rate=20, duration=3)
    return run.run_load(run.System(rules, server, instances, service=service), swarm)


def python_service(mode: str) -> Service:
    return Service(command=f"{sys.executable} {SERVICE} {mode}")


@pytest.mark.slow
@pytest.mark.usefixtures("client")
def test_each_copy_gets_the_contract_and_a_correct_service_is_clean(
    redis_server: RedisServer,
) -> None:
    run_dir, verdict = served(redis_server, python_service("expiring"))
    (api,) = verdict.rules
    assert verdict.valid, api.found
    assert api.served
    assert api.server.operations > 100
    assert "immortal-key" in api.server.checked  # the keys it left were read
    for number in (0, 1):
        told = (run_dir / "logs" / f"app-{number}.log").read_text().split()
        assert f"REDIS_URL={redis_server.url}" in told
        assert f"RATELIMIT_POLICY={POLICY}" in told
        assert f"RATELIMIT_INSTANCE={number}" in told
    assert verdict.setup["service"] == f"exec:{sys.executable} {SERVICE} expiring"


@pytest.mark.slow
@pytest.mark.usefixtures("client")
def test_a_service_that_leaves_counters_without_a_ttl_shows_its_immortal_keys(
    redis_server: RedisServer,
) -> None:
    _, verdict = served(redis_server, python_service("immortal"))
    (api,) = verdict.rules
    assert api.found == {"immortal-key"}  # it admits rightly; its keys never expire
    assert api.count("immortal-key") >= 4  # one per API key and window at least


@pytest.mark.slow
def test_counts_already_in_redis_leave_the_rejections_unjudged(
    redis_server: RedisServer, client: redis.Redis
) -> None:
    now = int(time.time())
    for second in range(now, now + 60):  # every window the run reaches: full, and no TTL
        client.set(f"svc:team-0:{second}", 1000)
    run_dir, verdict = served(redis_server, python_service("expiring"))
    (api,) = verdict.rules
    assert verdict.valid  # team-0's rejections, every one, would have looked wrongful
    assert "wrongful-rejection" not in api.checks
    assert "60 of its keys were in Redis before the run" in api.unjudged["wrongful-rejection"]
    assert "immortal-key" in api.server.checked  # judged, but not on keys immortal before
    assert api.client_outcomes["rejected"] > 0
    assert set(json.loads((run_dir / "keys-before.json").read_text())["api"]) == {
        f"svc:team-0:{second}" for second in range(now, now + 60)
    }
    note = "api: wrongful-rejection not judged: 60 of its keys were in Redis before the run"
    assert any(line.startswith(note) for line in load_footer(LoadRun(run_dir, verdict)))


@pytest.fixture
def running_service(redis_server: RedisServer, client: redis.Redis) -> Iterator[str]:
    """A service on the emptied server: the run reads no Redis, so it could not tell."""
    port = free_port()
    env = os.environ | {
        "PORT": str(port),
        "REDIS_URL": redis_server.url,
        "RATELIMIT_POLICY": POLICY,
        "RATELIMIT_INSTANCE": "0",
    }
    command = [sys.executable, str(SERVICE), "expiring"]
    process = subprocess.Popen(command, env=env, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while process.poll() is None and time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                time.sleep(0.1)
        yield url
    finally:
        process.kill()
        process.wait()


@pytest.mark.slow
def test_a_target_already_running_is_judged_from_its_clients_alone(running_service: str) -> None:
    no_redis = redis_for(None, None, False, Service(targets=(running_service,)))
    assert no_redis.how == NO_REDIS
    run_dir, verdict = served(no_redis, Service(targets=(running_service,)))
    (api,) = verdict.rules
    assert verdict.valid
    assert "immortal-key" not in api.server.checked  # no Redis to read: no keys judged
    assert verdict.setup["instances"] == 1
    assert not list((run_dir / "logs").glob("app-*.log"))  # nothing was started


@pytest.mark.slow
@pytest.mark.usefixtures("client")
@pytest.mark.parametrize(("limiter", "expected"), [("lua", set()), ("get-set", {"over-admission"})])
def test_a_node_service_with_a_correct_and_a_broken_limiter(
    redis_server: RedisServer, limiter: str, expected: set[str]
) -> None:
    why = unavailable()
    if why is not None:
        if os.environ.get("HARNESS_REQUIRE_ALL_PATHS") == "1":
            pytest.fail(f"the Node service is required but cannot run: {why}")
        pytest.skip(f"the Node service cannot run: {why}")
    _, verdict = served(redis_server, Service(command=f"node {NODE_SERVICE} {limiter}"), 3)
    (api,) = verdict.rules
    assert {"over-admission", "wrongful-rejection"} & api.found == expected


@pytest.mark.slow
def test_what_a_service_forked_dies_with_a_harness_killed_outright(tmp_path: Path) -> None:
    forking = f"sh -c 'sleep 600 & exec {sys.executable} {SERVICE} expiring'"
    command = [
        sys.executable,
        "-m",
        "ratelimit_harness",
        "load",
        "--service",
        forking,
        "--policy",
        POLICY,
    ]
    harness = subprocess.Popen(
        [*command, "--duration", "60", "--instances", "2", "--redis", "embedded"],
        cwd=tmp_path,
        env=child_env(GUARD_TEST_MARK=str(tmp_path)),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:  # until both copies answer: their clients journal
        assert wait_for(lambda: len(list(tmp_path.glob("runs/*/journals/client/*/*"))) > 0, 60)
    finally:
        harness.kill()  # SIGKILL: its guards kill the copies and the sleeps they forked
        harness.wait()
    assert wait_for(lambda: not running_for(tmp_path), timeout=10), running_for(tmp_path)


@pytest.mark.slow
@pytest.mark.usefixtures("client")
def test_a_service_killed_and_started_again_leaves_nothing_it_forked(
    redis_server: RedisServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GUARD_TEST_MARK", str(tmp_path))  # in every process the run starts
    forking = Service(command=f"sh -c 'sleep 600 & exec {sys.executable} {SERVICE} expiring'")
    rules = load_rules(None, served=True).with_default(None, POLICY)
    swarm = run.Swarm(run.locustfile_path("burst"), users=20, spawn_rate=20, duration=4)
    faults = run.Faults(parse_nemesis("kill-instance"), Schedule(1.0, 0.5))
    _, verdict = run.run_load(run.System(rules, redis_server, 2, service=forking), swarm, faults)
    assert [f.fault for f in verdict.faults][:2] == ["kill-instance", "kill-instance"]
    assert verdict.sent == verdict.judged
    assert not running_for(tmp_path)  # the killed copies' sleeps too, and the last ones'


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--service", "node x.js", "--limiter", "fixed-window-lua"], "yours decides"),
        (["--service", " "], "--service needs a command"),
        (["--target", "ftp://127.0.0.1:21"], "is not an http:// or https:// URL"),
        (["--target", "http://192.0.2.7:8000"], "not on loopback"),
        (["--target", ","], "at least one URL"),
        (["--service", "no-such-program-anywhere --port 1"], "cannot start"),
        (
            ["--service", f"{sys.executable} -c 'print(\"no port for me\"); exit(3)'"],
            "exited with 3",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str], redis_server: RedisServer
) -> None:
    assert main(["load", "--duration", "1", "--redis-url", redis_server.url, *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert message in err[0]
