"""The load half's nemesis: its table, its schedule, what it writes, and runs that meet faults
and still end with their verdict."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ratelimit_harness.harness.cli import main
from ratelimit_harness.harness.history import Operation, Outcome
from ratelimit_harness.harness.history.loads import FaultRecord
from ratelimit_harness.harness.history.verdict import Witness
from ratelimit_harness.harness.load import run
from ratelimit_harness.harness.load.contract.rules import default_rules
from ratelimit_harness.harness.load.faults.effects import (
    Seen,
    effects,
    fault_spans,
    fell_in,
    read_faults,
)
from ratelimit_harness.harness.load.faults.nemesis import (
    LoadFault,
    Nemesis,
    NemesisError,
    Schedule,
    Victims,
    check_victims,
    parse_nemesis,
)
from ratelimit_harness.harness.load.system.fleet import Fleet
from ratelimit_harness.harness.provision import RedisServer, provision_cluster
from ratelimit_harness.harness.provision.cluster import role_of
from ratelimit_harness.harness.provision.embedded import start_embedded
from ratelimit_harness.harness.report import write_report
from tests.harness.support import child_env, running_for

pytestmark = pytest.mark.realtime  # on the wall clock: run one at a time


def test_the_nemesis_names_faults_of_the_table() -> None:
    assert parse_nemesis("none") == ()
    assert [f.name for f in parse_nemesis("kill-redis, kill-instance,kill-redis")] == [
        "kill-redis",
        "kill-instance",
    ]
    with pytest.raises(NemesisError, match=r"unknown fault 'unplug'.*known: kill-redis"):
        parse_nemesis("kill-redis,unplug")


@pytest.mark.parametrize(("every", "lasting"), [(2, 2), (2, 3), (5, 0), (5, -1)])
def test_a_fault_must_end_before_the_next_begins(every: float, lasting: float) -> None:
    with pytest.raises(NemesisError, match="--nemesis-for"):
        Schedule(every, lasting)


def test_a_fault_the_system_cannot_take_is_refused() -> None:
    with pytest.raises(NemesisError, match="a Redis the harness did not start"):
        check_victims(parse_nemesis("kill-redis"), ours=False, cluster=False, instances=True)
    with pytest.raises(NemesisError, match="a Redis Cluster"):
        check_victims(parse_nemesis("pause-redis"), ours=True, cluster=True, instances=True)
    with pytest.raises(NemesisError, match="needs instances the harness started"):
        check_victims(parse_nemesis("kill-instance"), ours=True, cluster=False, instances=False)
    check_victims(parse_nemesis("kill-instance"), ours=False, cluster=True, instances=True)


def recording_fault(done: list[str], *, fails: str = "") -> LoadFault:
    def begin(_: Victims, turn: int) -> str:
        done.append(f"begin {turn} on {threading.current_thread().name}")
        if fails == "begin":
            raise RuntimeError("cannot")
        return f"thing-{turn}"

    def end(_: Victims, turn: int) -> None:
        done.append(f"end {turn}")

    return LoadFault("test-fault", "for the tests", "instances", begin, end)


def test_faults_begin_and_end_on_schedule_each_a_marked_event(tmp_path: Path) -> None:
    done: list[str] = []
    victims = Victims(RedisServer("", "none", ""), Fleet(tmp_path))
    times = iter(float(n) for n in range(100))
    nemesis = Nemesis(
        (recording_fault(done),), victims, Schedule(0.05, 0.02), tmp_path, lambda: next(times)
    )
    with nemesis:
        deadline = threading.Event()
        for _ in range(200):  # bounded: at most 2 s
            if sum(line.startswith("end") for line in done) >= 2:
                break
            deadline.wait(0.01)
    lines = [json.loads(line) for line in (tmp_path / "faults.jsonl").read_text().splitlines()]
    assert [(r["turn"], r["phase"]) for r in lines[:4]] == [
        (0, "start"),
        (0, "end"),
        (1, "start"),
        (1, "end"),
    ]
    assert lines[0]["detail"] == "thing-0"
    assert all("on nemesis-hands" in line for line in done if line.startswith("begin"))
    faults = read_faults(tmp_path)
    assert [(f.turn, f.end is not None) for f in faults][:2] == [(0, True), (1, True)]


def test_a_fault_slow_to_undo_leaves_the_system_its_healthy_stretch(tmp_path: Path) -> None:
    stamps: list[tuple[str, float]] = []

    def begin(_: Victims, turn: int) -> str:
        stamps.append(("begin", time.monotonic()))
        return ""

    def end(_: Victims, turn: int) -> None:
        time.sleep(0.15)  # an instance slow to start again: longer than the fault lasts
        stamps.append(("end", time.monotonic()))

    slow = LoadFault("slow-fault", "for the tests", "instances", begin, end)
    victims = Victims(RedisServer("", "none", ""), Fleet(tmp_path))
    with Nemesis((slow,), victims, Schedule(0.1, 0.05), tmp_path):
        for _ in range(300):  # bounded: at most 3 s
            if len(stamps) >= 4:
                break
            time.sleep(0.01)
    phases = [phase for phase, _ in stamps]
    assert phases[:4] == ["begin", "end", "begin", "end"]
    # scheduled at 0.2 s, the second fault waits until 0.05 s (every - lasting) after the first
    # was undone, at about 0.3 s
    assert stamps[2][1] - stamps[1][1] >= 0.05 - 0.005


def test_stopping_ends_the_fault_that_is_on(tmp_path: Path) -> None:
    done: list[str] = []
    victims = Victims(RedisServer("", "none", ""), Fleet(tmp_path))
    nemesis = Nemesis((recording_fault(done),), victims, Schedule(0.05, 0.04), tmp_path).start()
    for _ in range(200):
        if done:
            break
        threading.Event().wait(0.001)
    nemesis.stop()
    assert done[-1].startswith("end")  # whatever was on when it stopped was ended
    marked = (tmp_path / "faults.jsonl").read_text().splitlines()
    phases = [json.loads(line)["phase"] for line in marked]
    assert phases[-1] == "end"
    assert phases.count("start") == phases.count("end")


def test_a_fault_that_cannot_be_done_is_said_and_the_nemesis_stops(tmp_path: Path) -> None:
    done: list[str] = []
    victims = Victims(RedisServer("", "none", ""), Fleet(tmp_path))
    fault = recording_fault(done, fails="begin")
    with Nemesis((fault,), victims, Schedule(0.01, 0.005), tmp_path):
        threading.Event().wait(0.2)
    (line,) = [json.loads(line) for line in (tmp_path / "faults.jsonl").read_text().splitlines()]
    assert (line["phase"], line["detail"]) == ("error", "could not begin: cannot")
    assert len(done) == 1


# --- what a fault did ---------------------------------------------------------------------


def op(invoke: float, outcome: Outcome, latency: float | None = 0.01) -> Operation:
    complete = None if latency is None else invoke + latency
    return Operation("p", "k", invoke, complete, outcome)


def test_a_faults_effect_counts_undecided_lost_and_the_time_to_recover() -> None:
    allowed, unknown = Outcome.ALLOWED, Outcome.UNKNOWN
    seen = [
        op(1.0, allowed),
        *(op(10.0 + i / 10, unknown) for i in range(5)),  # during the fault: 5 failed
        op(12.2, unknown),  # after it ended, still failing
        op(12.5, allowed),  # decided again: answered at 12.51
        op(13.0, Outcome.REJECTED),
        op(19.9, unknown, latency=0.5),  # answered when the next fault was on: the next one's
    ]
    taken = [op(9.5, allowed, latency=None), op(3.0, allowed, latency=None)]
    faults = [FaultRecord("kill-redis", 0, 10.0, 12.0), FaultRecord("kill-redis", 1, 20.0, 21.0)]
    unfinished = [o.invoke for o in taken if o.complete is None]
    first, second = effects(Seen.of(seen), unfinished, faults, "closed")
    assert (first.requests, first.undecided, first.on_error) == (5, 6, "closed")
    assert first.lost == 2  # never answered, taken before it ended
    assert first.recovery == pytest.approx(0.51)
    assert second.requests == 0
    assert second.recovery is None  # nothing was decided after it


def test_over_admissions_and_broken_promises_in_a_span_a_fault_fell_in_are_that_faults() -> None:
    faults = [FaultRecord("kill-redis", 0, 10.0, 12.0), FaultRecord("kill-redis", 1, 20.0, 21.0)]
    over = [
        Witness("a", (9.0, 10.5), [], "a window open as Redis died", excess=2),
        Witness("b", (11.5, 13.0), [], "one open as it came back"),
        Witness("c", (14.0, 15.0), [], "the limiter's own: no fault in it"),
        Witness("d", (20.5, 20.6), [], "inside the second"),
    ]
    broken = [Witness("e", (10.0, 13.5), [], "a promise after Redis came back empty")]
    seen = [op(1.0, Outcome.ALLOWED)]
    spans = fault_spans(Seen.of(seen), faults)
    first, second = effects(
        Seen.of(seen), [], faults, "closed", over=over, broken=fell_in(broken, spans)
    )
    assert (first.over_admitted, second.over_admitted) == (3, 1)
    assert (first.promises_broken, second.promises_broken) == (1, 0)
    assert effects(Seen.of(seen), [], faults, "closed")[0].over_admitted == 0


def test_marked_faults_read_back_and_a_fault_never_ended_has_no_end(tmp_path: Path) -> None:
    lines = [
        {"fault": "kill-redis", "turn": 0, "phase": "start", "time": 5.0, "detail": ""},
        {"fault": "kill-redis", "turn": 0, "phase": "end", "time": 7.0, "detail": ""},
        {"fault": "kill-instance", "turn": 1, "phase": "start", "time": 10.0, "detail": "app-1"},
    ]
    text = "\n".join(json.dumps(line) for line in lines) + '\n{"fault": "trunc'
    (tmp_path / "faults.jsonl").write_text(text)
    assert read_faults(tmp_path) == [
        FaultRecord("kill-redis", 0, 5.0, 7.0),
        FaultRecord("kill-instance", 1, 10.0, None, "app-1"),
    ]


# --- a Redis of ours, under control ------------------------------------------------------


@pytest.mark.integration
def test_a_redis_of_ours_is_killed_paused_and_started_again_empty_on_its_port() -> None:
    import redis

    with start_embedded() as server:
        control = server.control
        assert control is not None
        with redis.Redis.from_url(server.url, socket_timeout=1) as client:
            client.set("k", 1)
            control.kill()
            with pytest.raises(redis.ConnectionError):
                client.ping()
            control.start()
            assert client.get("k") is None  # empty again, on the same URL
            client.set("k", 2)
            control.pause()
            with pytest.raises(redis.TimeoutError):
                client.ping()
            control.resume()
            assert client.get("k") == b"2"
            control.shutdown()
            control.start()
            assert client.ping()


# --- whole runs that meet faults ---------------------------------------------------------


@pytest.fixture
def runs_in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(run, "RUNS", tmp_path / "runs")


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.usefixtures("runs_in_tmp")
@pytest.mark.parametrize(
    "fault",
    ["kill-redis", "restart-redis", "pause-redis", "kill-instance", "partition", "refuse", "skew"],
)
def test_a_run_that_meets_a_fault_ends_with_its_verdict(fault: str) -> None:
    with start_embedded() as server:
        rules = default_rules().with_default("fixed-window-lua", None)
        swarm = run.Swarm(run.locustfile_path("burst"), users=20, spawn_rate=20, duration=5)
        faults = run.Faults(parse_nemesis(fault), Schedule(1.5, 0.6))
        run_dir, verdict = run.run_load(run.System(rules, server, 2), swarm, faults)
    (api,) = [r for r in verdict.rules if r.name == "api"]
    if fault in ("kill-redis", "restart-redis"):
        # Redis back empty mid-window: a correct limiter admits that window's budget again, and
        # its Remaining promised too much; the verdict says so, and nothing else
        assert api.found <= {"over-admission", "remaining-broken-promise"}
    else:
        assert verdict.valid, api.found  # a correct limiter stays correct through the fault
    assert verdict.setup["keys_unread"] is None  # Redis was back for the final verdict
    marked = verdict.faults
    assert marked
    assert {f.fault for f in marked} == {fault}
    assert all(f.end is not None for f in marked)
    effect = marked[0].effects["api"]
    if fault in ("pause-redis", "partition"):  # everything waits
        assert api.latency_ms["max"] >= 500
    elif fault == "skew":  # a clock off: nothing fails, and a correct limiter does not mind
        assert marked[0].detail == "app-0 +0.500 s"
    else:
        assert effect.undecided > 0  # refused (on_error closed) while it lasted
    # and decided again after (before the next fault: on a loaded machine, after one at least)
    assert any(f.effects["api"].recovery is not None for f in marked)
    saved = json.loads((run_dir / "verdict.json").read_text())
    assert saved["faults"][0]["effects"]["api"]["requests"] == effect.requests
    assert run_dir / "latency-time.png" in write_report([run_dir])  # the fault bands' plot


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--nemesis", "unplug"], "unknown fault 'unplug'"),
        (["--nemesis", "kill-redis", "--nemesis-every", "1", "--nemesis-for", "1"], "less than"),
        (["--nemesis", "kill-redis", "--redis-url", "redis://127.0.0.1:1/0"], "did not start"),
        (["--nemesis", "kill-instance", "--target", "http://127.0.0.1:9"], "needs instances"),
    ],
)
def test_bad_nemesis_input_is_one_line_and_exit_2(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["load", "--duration", "1", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert message in err[0]


@pytest.mark.slow
@pytest.mark.integration
def test_a_run_whose_harness_was_killed_is_judged_afterwards_from_its_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    command = [
        sys.executable,
        "-m",
        "ratelimit_harness",
        "load",
        "--duration",
        "60",
        "--instances",
        "2",
    ]
    began = time.time()
    harness = subprocess.Popen(
        [*command, "--redis", "embedded"],
        cwd=tmp_path,
        env=child_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        journals = tmp_path / "runs"
        for _ in range(600):  # until decisions are journalled: at most a minute
            found = list(journals.glob("load-*/journals/client/api/*.jsonl"))
            if found and found[0].stat().st_size > 50_000:
                break
            time.sleep(0.1)
        else:
            pytest.fail("the run journalled nothing in a minute")
    finally:
        harness.kill()  # SIGKILL: no verdict, no report; its children die with it
        harness.wait()
    (run_dir,) = journals.glob("load-*")
    for _ in range(100):  # its swarm and instances (granian's workers too) die with it
        if not running_for(run_dir):
            break
        time.sleep(0.1)
    assert not running_for(run_dir)
    gone = time.time()  # its children may journal a few ms after the harness is killed
    assert not (run_dir / "verdict.json").exists()
    capsys.readouterr()
    assert main(["check", str(run_dir)]) == 0  # a correct limiter, judged afterwards
    out = capsys.readouterr().out
    assert "judged afterwards" in out
    assert "no violation" in out
    verdict = json.loads((run_dir / "verdict.json").read_text())
    assert verdict["setup"]["judged_afterwards"]
    started = verdict["setup"]["started"]  # its first request: the journals' span
    assert began < started < started + verdict["seconds"] < gone
    assert verdict["requests"] > 0
    assert (run_dir / "report.html").exists()
    assert main(["check", str(run_dir)]) == 0  # now as any judged run: its histories again
    assert "(as recorded)" in capsys.readouterr().out


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.cluster
@pytest.mark.usefixtures("runs_in_tmp")
def test_a_run_on_a_cluster_meets_failovers_and_ends_with_its_verdict() -> None:
    with provision_cluster("embedded", replicas=True) as server:
        before = {url: role_of(url) for url in (*server.node_urls, *server.replica_urls)}
        rules = default_rules().with_default("fixed-window-lua", None)
        swarm = run.Swarm(run.locustfile_path("burst"), users=20, spawn_rate=20, duration=5)
        faults = run.Faults(parse_nemesis("failover"), Schedule(2.0, 1.0))
        system = run.System(rules, server, 2, cluster=True)
        _, verdict = run.run_load(system, swarm, faults)
        after = {url: role_of(url) for url in before}
    assert verdict.valid  # a planned failover loses nothing a correct limiter counted
    assert verdict.faults
    assert verdict.faults[0].detail.startswith("shard 0: ")
    assert [before[u] for u in server.node_urls] == ["master"] * 3
    assert after[server.replica_urls[0]] == "master"  # the first shard's replica took over
    assert after[server.node_urls[0]] == "slave"


def test_a_failover_needs_a_cluster_of_its_own() -> None:
    with pytest.raises(NemesisError, match="needs --cluster"):
        check_victims(parse_nemesis("failover"), ours=True, cluster=False, instances=True)
