"""The load half end to end: app instances on a real Redis, a headless Locust swarm, the verdict.

Each run is a few seconds of real traffic; the limits are small so that identities meet them
many times a second.
"""

from __future__ import annotations

import contextlib
import csv
import json
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
import redis

from ratelimit_harness.harness.cli import main
from ratelimit_harness.harness.history import read_history
from ratelimit_harness.harness.load import run
from ratelimit_harness.harness.load.contract.rules import default_rules
from ratelimit_harness.harness.load.judge.final import judge
from ratelimit_harness.harness.load.system.fleet import start_fleet
from ratelimit_harness.harness.provision import RedisServer
from ratelimit_harness.harness.provision.base import free_port
from tests.harness.support import ROOT, child_env, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.realtime]


@pytest.fixture(autouse=True)
def runs_in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(run, "RUNS", tmp_path / "runs")


def swarm(seconds: float = 5, locustfile: str = "burst") -> run.Swarm:
    return run.Swarm(run.locustfile_path(locustfile), users=30, spawn_rate=30, duration=seconds)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("limiter", "expected"),
    [
        ("in-memory", {"over-admission"}),  # Part 7: four instances, four counters
        ("naive-get-set", {"over-admission", "wrongful-rejection"}),  # Part 7's WRONG
        ("fixed-window-lua", set()),
    ],
)
def test_a_swarm_exposes_broken_limiters_and_clears_a_correct_one(
    redis_server: RedisServer, limiter: str, expected: set[str]
) -> None:
    rules = default_rules().with_default(limiter, None)
    run_dir, verdict = run.run_load(run.System(rules, redis_server, 4), swarm())
    (api,) = [r for r in verdict.rules if r.name == "api"]
    assert api.server.kinds == expected
    assert api.server.operations > 500  # the swarm did run
    assert 4 < verdict.seconds < 5.5  # its rate is over its 5 s, not the instances' start too
    assert verdict.valid == (not expected)
    saved = json.loads((run_dir / "verdict.json").read_text())
    assert saved["valid"] == verdict.valid
    assert (saved["setup"]["instances"], saved["setup"]["users"]) == (4, 30)
    assert (run_dir / "history" / "api.history.jsonl").stat().st_size > 0
    assert api.latency_ms["count"] == sum(api.client_outcomes.values()) > 0


@pytest.mark.slow
@pytest.mark.parametrize(
    ("limiter", "caught"),
    [
        ("fixed-window-lua", False),  # gives back in one script
        ("fixed-window-refund-get-set", True),  # HMGET, then HSET: Part 7's lost update
    ],
)
def test_requests_given_back_are_judged_and_a_racing_give_back_is_caught(
    redis_server: RedisServer, limiter: str, caught: bool
) -> None:
    rules = default_rules().with_default(limiter, "fixed-window:limit=20,window=1", refund="failed")
    system = run.System(rules, redis_server, 2)
    run_dir, verdict = run.run_load(system, swarm(6, "failing"))
    (api,) = [r for r in verdict.rules if r.name == "api"]
    history = read_history(run_dir / "history" / "api.history.jsonl")
    given_back = [op for op in history if op.refund is not None]
    assert len(given_back) > 50, "the swarm failed requests, and the app gave them back"
    assert api.server.metrics["given_back"] == len(given_back)
    if caught:
        assert api.server.kinds & {"over-admission", "wrongful-rejection"}, api.server.to_json()
    else:
        assert api.server.kinds == set(), api.server.to_json()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("limiter", "expected"),
    [
        ("fixed-windows-lua", set()),  # every window checked, then counted, in one script
        ("fixed-windows-two-trips", {"wrongful-rejection"}),  # a round trip per window
    ],
)
def test_a_rule_of_several_limits_names_them_and_is_judged_by_each(
    redis_server: RedisServer, limiter: str, expected: set[str]
) -> None:
    # the 3 s window turns inside the 2 s one, so a count the first keeps can wrong the second
    policy = "fixed-window:limit=10,window=2 + fixed-window:limit=12,window=3"
    rules = default_rules().with_default(limiter, policy)
    run_dir, verdict = run.run_load(run.System(rules, redis_server, 2), swarm(7))
    (api,) = [r for r in verdict.rules if r.name == "api"]
    assert api.server.kinds == expected, api.server.to_json()
    assert api.server.policy == policy
    lies = json.loads((run_dir / "verdict.json").read_text())["rules"]
    (told,) = [r["header_lies"] for r in lies if r["rule"] == "api"]
    # the twin tells what its last window has left, more than the first has
    assert bool(told) == bool(expected), told


@pytest.mark.slow
def test_the_boundary_attack_is_caught_when_judged_by_the_sliding_window(
    redis_server: RedisServer,
) -> None:
    rules = default_rules().with_default(None, None, "sliding-window:limit=10,window=1")
    _, verdict = run.run_load(run.System(rules, redis_server, 2), swarm(4, "boundary"))
    (api,) = [r for r in verdict.rules if r.name == "api"]
    assert "over-admission" in api.server.kinds
    assert not api.lies


def test_waiting_retry_after_is_rewarded_and_refusals_carry_every_header(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    rules = default_rules().with_default(None, "fixed-window:limit=2,window=2")
    with start_fleet(tmp_path, rules, redis_server.url, 2, tag="headers") as fleet:
        _sleep_to_a_window_start(redis_server.url, window=2)  # the four requests share a window
        statuses = [_get(fleet.urls[n % 2] + "/api/x", "k")[0] for n in range(3)]
        assert statuses == [200, 200, 429]
        status, headers = _get(fleet.urls[0] + "/api/x", "k")
        assert status == 429
        for name in ("retry-after", "x-ratelimit-limit", "x-ratelimit-remaining"):
            assert name in headers
        assert headers["ratelimit-policy"] == '"api";q=2;w=2'
        time.sleep(int(headers["retry-after"]) + 0.01)
        assert _get(fleet.urls[1] + "/api/x", "k")[0] == 200


def _sleep_to_a_window_start(url: str, window: int) -> None:
    """Sleep until just after the Redis server's clock crosses a multiple of ``window`` seconds,
    where a fixed window starts."""
    seconds, micros = redis.Redis.from_url(url).time()
    time.sleep(window - (seconds + micros / 1e6) % window + 0.02)


def _get(url: str, api_key: str) -> tuple[int, dict[str, str]]:
    request = urllib.request.Request(url, headers={"X-API-Key": api_key})
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:
            return answer.status, {k.lower(): v for k, v in answer.headers.items()}
    except urllib.error.HTTPError as refused:
        return refused.code, {k.lower(): v for k, v in refused.headers.items()}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--instances", "0"], "--instances must be"),
        (["--redis-url", "redis://10.1.2.3:6379/0"], "not on loopback"),
        (["--config", "/nonexistent/rules.toml"], "No such file"),
        (["--locustfile", "no-such-pattern"], "no locustfile"),
        (["--limiter", "no-such-limiter"], "unknown limiter"),
        (
            ["--limiter", "fixed-window-lua", "--policy", "token-bucket:capacity=1,rate=1"],
            "enforces",
        ),
        (["--users", "0"], "--users must be"),
        (["--duration", "2.5"], "--duration is whole seconds"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["load", "--duration", "1", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert message in err[0]


@pytest.mark.slow
def test_a_remaining_that_promises_too_much_is_a_header_lie(redis_server: RedisServer) -> None:
    rules = default_rules().with_default("tests.harness.load.plugins:boastful", None)
    _, verdict = run.run_load(run.System(rules, redis_server, 2), swarm(4))
    (api,) = [r for r in verdict.rules if r.name == "api"]
    assert api.server.valid  # it decides right; only its headers lie
    assert api.header_lies.get("remaining-broken-promise", 0) > 0
    assert "remaining-broken-promise" in api.header_lie_examples
    assert not verdict.valid


def test_a_killed_instance_leaves_its_requests_in_flight_unknown(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    rules = default_rules().with_default("tests.harness.load.plugins:slow", None)
    with start_fleet(tmp_path, rules, redis_server.url, 2, tag="kill") as fleet:
        assert _get(fleet.urls[1] + "/api/x", "k")[0] == 200
        sender = threading.Thread(target=_get_or_fail, args=(fleet.urls[0] + "/api/x",))
        sender.start()
        time.sleep(0.2)  # the request is inside the slow limiter now
        fleet.instances[0].kill()
        sender.join(timeout=10)
    verdict = judge(tmp_path, rules, {}, 1.0)
    (api,) = [r for r in verdict.rules if r.name == "api"]
    assert api.server.metrics["outcomes"] == {"allowed": 1, "unknown": 1}
    history = read_history(tmp_path / "history" / "api.history.jsonl")
    (lost,) = [op for op in history if op.outcome == "unknown"]
    assert (lost.process, lost.complete) == ("app-0", None)


def _get_or_fail(url: str) -> None:
    with contextlib.suppress(OSError):  # the instance dies under it
        _get(url, "k")


@pytest.mark.slow
def test_two_locust_processes_report_every_client_to_the_master(
    redis_server: RedisServer,
) -> None:
    rules = default_rules().with_default("in-memory", None)
    two = run.Swarm(run.locustfile_path("burst"), 30, 30, duration=5, processes=2)
    run_dir, verdict = run.run_load(run.System(rules, redis_server, 2), two)
    (api,) = [r for r in verdict.rules if r.name == "api"]
    assert len(list((run_dir / "journals" / "client" / "api").glob("*.jsonl"))) == 2
    seen = sum(api.client_outcomes.values())
    assert seen == api.latency_ms["count"]
    assert seen == pytest.approx(api.client.operations, abs=50)  # the last reports may be cut
    assert "over-admission" in api.server.kinds


@pytest.mark.slow
@pytest.mark.cluster
def test_a_swarm_on_a_redis_cluster(cluster_server: RedisServer) -> None:
    system = run.System(default_rules(), cluster_server, 2, cluster=True)
    _, verdict = run.run_load(system, swarm(4, "tenants"))
    by_rule = {r.name: r for r in verdict.rules}
    for name in ("api", "api-pro"):  # a fixed window and a token bucket, both atomic Lua
        assert by_rule[name].server.operations > 100
        assert by_rule[name].valid
    assert by_rule["api"].server.metrics["outcomes"]["rejected"] > 0  # the free keys met it


@pytest.mark.slow
def test_a_limiter_that_never_decides_ends_with_exit_2_and_its_failure(
    redis_server: RedisServer, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["load", "--limiter", "tests.harness.load.plugins:undecided", "--duration", "3"]
    args += ["--instances", "1", "--users", "5", "--redis-url", redis_server.url]
    assert main(args) == 2
    out, err = capsys.readouterr()
    shown = " ".join(out.split())  # as the terminal wraps it
    assert "Load: nothing decided by api: its limiter failed every request." in shown
    assert "failed (the first time: TypeError: a limiter returned 'maybe'" in shown
    (line,) = [line for line in err.splitlines() if line.startswith("error:")]
    assert "decided nothing" in line
    assert "expected a bool or an object with .allowed" in line


@pytest.mark.slow
def test_constant_rate_keeps_each_users_schedule(redis_server: RedisServer) -> None:
    paced = run.Swarm(
        run.locustfile_path("tenants"), 10, 100, duration=4, constant_rate=5
    )  # 10 users at 5 requests/s each for about 4 s, whatever the pattern's own waits
    _, verdict = run.run_load(run.System(default_rules(), redis_server, 2), paced)
    sent = sum(sum(r.client_outcomes.values()) for r in verdict.rules)
    assert 150 <= sent <= 220


def _locust(cwd: Path, *args: str) -> subprocess.Popen[bytes]:
    """``locust ARGS`` in ``cwd`` (its own folder: nothing shared with the others but the
    network), its output to ``cwd/locust.log``, with none of the harness's options set."""
    cwd.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in child_env().items() if not k.startswith("HARNESS_LOAD_")}
    with (cwd / "locust.log").open("wb") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "locust", *args],
            cwd=cwd,
            env={**env, "PYTHONPATH": str(ROOT)},
            stdout=log,
            stderr=subprocess.STDOUT,
        )


@pytest.mark.slow
def test_workers_without_a_shared_folder_ship_every_request_to_the_master(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    """Locust's master and two workers, each in a folder of its own, as on three machines: the
    run directory is the master's alone (given as a relative path, which means nothing where a
    worker runs). The workers' journals come with their stats reports; every request Locust
    counted is judged, and in-memory behind two instances is caught as a run of one machine
    catches it (``test_two_locust_processes_report_every_client_to_the_master``)."""
    rules = default_rules().with_default("in-memory", None)
    system = run.System(rules, redis_server, 2)
    locustfile = str(run.locustfile_path("burst"))
    port = free_port()
    began = time.time()
    with run.running(system, "serve") as (run_dir, tag, fleet, _):
        master_dir = run_dir.parent.parent  # runs/ is under it: the run dir as a relative path
        master = _locust(
            master_dir,
            *("-f", locustfile, "--master", "--headless", "-u", "20", "-r", "20", "-t", "5s"),
            *("--expect-workers", "2", "--master-bind-host", "127.0.0.1"),
            *("--master-bind-port", str(port), "--csv", "stats", "--only-summary"),
            *("--targets", ",".join(fleet.urls), "--rules-json", rules.to_json()),
            *("--run-dir", str(run_dir.relative_to(master_dir))),
        )
        workers = [
            _locust(
                tmp_path / f"worker-{n}",
                "-f",
                locustfile,
                "--worker",
                "--master-host",
                "127.0.0.1",
                "--master-port",
                str(port),
            )
            for n in range(2)
        ]
        try:
            assert master.wait(timeout=60) in (0, 1), (master_dir / "locust.log").read_text()
            for worker in workers:
                worker.wait(timeout=30)
        finally:
            for process in (master, *workers):
                if process.poll() is None:
                    process.kill()
    verdict = run.finish(system, run_dir, tag, time.time() - began)
    (api,) = [r for r in verdict.rules if r.name == "api"]
    shipped = sorted((run_dir / "journals" / "client" / "api").glob("*.jsonl"))
    assert len(shipped) == 2, shipped  # one a worker, each named after its sender
    assert not any(Path(tmp_path, f"worker-{n}", "runs").exists() for n in range(2))
    with (master_dir / "stats_stats.csv").open() as stats:
        counted = {row["Name"]: int(row["Request Count"]) for row in csv.DictReader(stats)}
    # every request Locust counted is judged as it ended, and those in flight at the stop,
    # which Locust never counts, as unknown
    outcomes = api.client.metrics["outcomes"]
    assert api.sent == api.client.operations
    assert outcomes["allowed"] + outcomes["rejected"] == counted["/api/items"]
    assert outcomes.get("unknown", 0) == api.sent - counted["/api/items"]
    assert "over-admission" in api.client.kinds
    assert "over-admission" in api.server.kinds


@pytest.mark.slow
def test_the_tab_keeps_up_with_a_no_wait_swarm_at_every_poll(tmp_path: Path) -> None:
    """The web UI under users that never wait: each answer the page polls (every 2 s) shows
    decisions within 5 % of the requests Locust counted in that same answer."""
    port = free_port()
    command = [
        *(sys.executable, "-m", "ratelimit_harness", "load", "--limiter", "fixed-window-lua"),
        *("--policy", "fixed-window:limit=1000000000,window=60", "--instances", "2"),
        *("--locustfile", "saturate", "--redis", "embedded"),
        *("--web", "--web-port", str(port)),
    ]
    base = f"http://127.0.0.1:{port}"
    with (tmp_path / "load.log").open("wb") as log:
        load = subprocess.Popen(command, cwd=tmp_path, env=child_env(), stdout=log, stderr=log)
    try:
        wait_for(lambda: load.poll() is not None or _answers(base), 60)
        form = urllib.parse.urlencode({"user_count": 32, "spawn_rate": 32}).encode()
        urllib.request.urlopen(f"{base}/swarm", data=form, timeout=10).close()
        polls = []
        for _ in range(4):
            time.sleep(2)
            with urllib.request.urlopen(f"{base}/stats/requests", timeout=10) as answer:
                stats = json.load(answer)
            made = next(s["num_requests"] for s in stats["stats"] if s["name"] == "Aggregated")
            shown = sum(row["decisions"] for row in stats["extended_stats"][0]["data"])
            polls.append((made, shown))
    finally:
        load.send_signal(signal.SIGINT)
        load.wait(timeout=120)
    assert polls[-1][0] > 2_000, polls  # the swarm ran
    for made, shown in polls:
        assert abs(shown - made) <= 0.05 * made, polls


def _answers(url: str) -> bool:
    try:
        urllib.request.urlopen(url, timeout=1).close()
    except OSError:
        return False
    return True
