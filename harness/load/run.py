"""``ratelimit-harness load`` and ``serve``: Redis, the instances, the live judge, a Locust
swarm, then the verdict, all in one run directory (``runs/load-TIME/``).

    RUN_DIR/rules.json        the rules the instances enforced
    RUN_DIR/journals/         what each instance decided and each Locust process saw
    RUN_DIR/provider.jsonl    the SMS provider's arrivals
    RUN_DIR/live.json         the live verdict (the web UI's Correctness tab)
    RUN_DIR/client.json       what the clients saw: outcomes, header lies, latency histograms
    RUN_DIR/history/          the merged histories, per rule
    RUN_DIR/verdict.json      the verdict, and how the run was set up
    RUN_DIR/logs/             every process's output, and Locust's stats (locust_*.csv)
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import redis

from ratelimit_harness.harness import rundir
from ratelimit_harness.harness.errors import HarnessError
from ratelimit_harness.harness.history.loads import LoadRecord
from ratelimit_harness.harness.load.contract.env import ENV
from ratelimit_harness.harness.load.contract.journals import Completions
from ratelimit_harness.harness.load.contract.rules import DEFAULT_RULE, Rules
from ratelimit_harness.harness.load.faults.nemesis import (
    LoadFault,
    Nemesis,
    Schedule,
    Victims,
    needs,
)
from ratelimit_harness.harness.load.faults.proxy import FaultProxy
from ratelimit_harness.harness.load.judge.final import judge, keep_keys_before, unjudged_kinds
from ratelimit_harness.harness.load.system.clocks import InstanceClocks
from ratelimit_harness.harness.load.system.fleet import Fleet, Process, spawn, start_fleet
from ratelimit_harness.harness.load.system.redis_of_run import rule_keys
from ratelimit_harness.harness.load.system.service import Service, start_service
from ratelimit_harness.harness.loopback import loopback_address
from ratelimit_harness.harness.parent_death import die_with_parent
from ratelimit_harness.harness.progress import stages
from ratelimit_harness.harness.provision import RedisServer

RUNS = Path("runs")
PROGRESS_EVERY = 5.0  # seconds between progress lines in a log
PROGRESS_ON_TERMINAL = 2.0  # seconds between updates of the one line a terminal shows
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class LoadError(HarnessError):
    """Bad input to ``load`` or ``serve``: one line saying what and why."""


@dataclass(frozen=True)
class Swarm:
    """How Locust runs: headless for ``duration`` seconds, or the web UI until stopped."""

    locustfile: Path
    users: int
    spawn_rate: float
    duration: float | None  # None: the web UI, until Ctrl-C
    processes: int = 1
    web_port: int = 8089
    constant_rate: float = 0.0


DEFAULT_SCHEDULE = Schedule(every=5.0, lasting=2.0)


@dataclass(frozen=True)
class Faults:
    """The nemesis of a load run: which faults, on what schedule."""

    faults: tuple[LoadFault, ...] = ()
    schedule: Schedule = DEFAULT_SCHEDULE


NO_FAULTS = Faults()


def locustfile_path(name: str) -> Path:
    """A pattern of ``locustfiles/`` by name (``burst``), or a locustfile by path."""
    given = Path(name)
    if given.suffix == ".py" and given.is_file():
        return given.resolve()
    packaged = resources.files("ratelimit_harness.locustfiles").joinpath(f"{name}.py")
    if packaged.is_file():
        return Path(str(packaged))
    known = sorted(
        p.name.removesuffix(".py")
        for p in resources.files("ratelimit_harness.locustfiles").iterdir()
        if p.name.endswith(".py") and not p.name.startswith("_")
    )
    raise LoadError(f"no locustfile {name!r}: give a path, or one of {', '.join(known)}")


def require_loopback(url: str, allow_remote: bool) -> None:
    """Refuse a URL off this machine's loopback unless told ``--allow-remote``."""
    if loopback_address(urlsplit(url).hostname or "") is None and not allow_remote:
        raise LoadError(f"{url} is not on loopback; pass --allow-remote to load another host")


def new_run_dir(command: str) -> Path:
    return rundir.new_run_dir(command, root=RUNS).resolve()


@dataclass(frozen=True)
class System:
    """The system under test: its rules, its Redis, how many instances, where they listen."""

    rules: Rules
    server: RedisServer
    instances: int = 4
    cluster: bool = False
    host: str = "127.0.0.1"
    service: Service | None = None  # a service of the user's own; None: the harness's app

    @property
    def limited_by(self) -> str:
        """The policy a service of the user's own is told to enforce: the default rule's."""
        rules = self.rules.rules
        return next((r.policy for r in rules if r.name == DEFAULT_RULE), rules[0].policy)


@contextlib.contextmanager
def running(
    system: System, command: str, faults: Faults = NO_FAULTS
) -> Iterator[tuple[Path, str, Fleet, FaultProxy | None]]:
    """A new run directory, and the system under test and its live judge running into it
    (stopped when the block ends): the directory, the run's key tag, the instances and the fault
    proxy between them and Redis (None when no fault needs one), built for what ``faults`` will
    do to them (through the proxy, on clocks of their own)."""
    run_dir = new_run_dir(command)
    tag = secrets.token_hex(4)
    keep_keys_before(run_dir, rule_keys(system.server, system.cluster, None, system.rules))
    for rule, kinds in unjudged_kinds(run_dir).items():
        for kind, why in kinds.items():
            print(f"note: rule {rule}: {why}; {kind} is not judged", file=sys.stderr)
    with contextlib.ExitStack() as stack:
        url, proxy = system.server.url, None
        if needs(faults.faults, "proxy"):
            log = run_dir / "logs" / "fault-proxy.log"
            log.parent.mkdir(parents=True, exist_ok=True)
            proxy = stack.enter_context(FaultProxy.for_url(url, log=log))
            url = proxy.url_for(url)
        clocks = InstanceClocks(run_dir) if needs(faults.faults, "clocks") else None
        fleet = stack.enter_context(_fleet(system, run_dir, tag, url, clocks))
        live = live_judge(run_dir)
        try:
            yield run_dir, tag, fleet, proxy
        finally:
            fleet.stop()
            live.stop()


def _fleet(
    system: System, run_dir: Path, tag: str, redis_url: str, clocks: InstanceClocks | None
) -> Fleet:
    """The instances, on ``redis_url`` (Redis', or a fault proxy's in front of it), each on
    its own clock of ``clocks`` if given."""
    if system.service is None:
        return start_fleet(
            run_dir,
            system.rules,
            redis_url,
            system.instances,
            tag=tag,
            cluster=system.cluster,
            host=system.host,
            clocks=clocks,
        )
    (run_dir / "rules.json").write_text(system.rules.to_json())
    return start_service(
        run_dir,
        system.service,
        redis_url,
        system.limited_by,
        instances=system.instances,
        host=system.host,
        clocks=clocks,
    )


def finish(
    system: System,
    run_dir: Path,
    tag: str,
    seconds: float,
    *,
    swarm: Swarm | None = None,
    faults: Faults = NO_FAULTS,
) -> LoadRecord:
    """Judge a stopped run (the keys it left while its Redis still runs); save the verdict,
    with how the run was set up. Its rate counts from its first request to its last answer
    (``seconds``, the whole run with its start and stop, only when no request was made)."""
    try:
        ttls, unread = rule_keys(system.server, system.cluster, tag, system.rules), None
    except redis.RedisError as error:  # a Redis gone for good: the verdict stands without keys
        ttls, unread = {}, f"{type(error).__name__}: {error}"
    service = system.service
    served_by = service.label if service else ""
    verdict = judge(run_dir, system.rules, ttls, None, served_by, progress=stages())
    if not verdict.seconds:
        verdict.seconds = seconds
    setup: dict[str, Any] = {
        "instances": len(service.targets) if service and service.targets else system.instances,
        "service": service.label if service else None,
        "keys_unread": unread,
        "started": round(verdict.setup.get("started", time.time() - seconds), 3),
        "redis": system.server.how,
        "cluster": system.cluster,
        "host": system.host,
        "tag": tag,
    }
    if faults.faults:
        setup |= {
            "nemesis": [fault.name for fault in faults.faults],
            "nemesis_every": faults.schedule.every,
            "nemesis_for": faults.schedule.lasting,
        }
    if swarm is not None:
        setup |= {
            "locustfile": str(swarm.locustfile),
            "users": swarm.users,
            "spawn_rate": swarm.spawn_rate,
            "duration": swarm.duration,
            "processes": swarm.processes,
            "constant_rate": swarm.constant_rate,
        }
    verdict.setup = setup
    verdict.write(run_dir)
    return verdict


def run_load(system: System, swarm: Swarm, faults: Faults = NO_FAULTS) -> tuple[Path, LoadRecord]:
    """One whole load run; its run directory and verdict."""
    began = time.time()
    with running(system, "load", faults) as (run_dir, tag, fleet, proxy):
        victims = Victims(system.server, fleet, proxy)
        with Nemesis(faults.faults, victims, faults.schedule, run_dir):
            _run_locust(swarm, fleet, system.rules, run_dir)
    return run_dir, finish(system, run_dir, tag, time.time() - began, swarm=swarm, faults=faults)


def serve_until_stopped(system: System) -> tuple[Path, LoadRecord]:
    """Start the system under test and its live judge, print the URLs, wait for Ctrl-C/TERM
    (or an instance to die), then judge."""
    began = time.time()
    with running(system, "serve") as (run_dir, tag, fleet, _):
        print("\n".join(fleet.urls), flush=True)
        print(f"journals in {run_dir}; Ctrl-C to stop and judge", file=sys.stderr)
        with until_interrupted():
            while all(p.alive() for p in fleet.instances):
                time.sleep(0.5)
    return run_dir, finish(system, run_dir, tag, time.time() - began)


def _run_locust(swarm: Swarm, fleet: Fleet, rules: Rules, run_dir: Path) -> None:
    command = [
        *(sys.executable, "-m", "locust", "-f", str(swarm.locustfile)),
        *("--web-host", "127.0.0.1", "--web-port", str(swarm.web_port)),
        *("-u", str(swarm.users), "-r", str(swarm.spawn_rate)),
    ]
    harness_options = {  # read by harness.load.swarm; Locust passes them on to its workers
        f"{ENV}RUN_DIR": str(run_dir),
        f"{ENV}TARGETS": ",".join(fleet.urls),
        f"{ENV}RULES": rules.to_json(),
        f"{ENV}CONSTANT_RATE": str(swarm.constant_rate),
    }
    if swarm.processes > 1:
        command += ["--processes", str(swarm.processes), "--master-bind-host", "127.0.0.1"]
    if swarm.duration is not None:
        command += ["--headless", "-t", f"{swarm.duration:g}s", "--only-summary"]
    command += ["--csv", str(run_dir / "logs" / "locust")]  # Locust's own stats, kept
    log = run_dir / "logs" / "locust.log"
    with log.open("wb") as out:
        locust = subprocess.Popen(
            command,
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, **harness_options},
            preexec_fn=die_with_parent,  # noqa: PLW1509 (only prctl, which is async-signal-safe)
        )
        try:
            _watch(locust, swarm, run_dir, decided_on=rules.decided_on)
        finally:
            if locust.poll() is None:
                locust.send_signal(signal.SIGTERM)
                locust.wait(timeout=30)
    tail = " | ".join(log.read_text(errors="replace").strip().splitlines()[-5:])
    if locust.returncode not in (0, 1, -signal.SIGTERM):  # 1: Locust saw failed requests
        raise LoadError(f"locust exited with {locust.returncode}: {tail}")
    if not (run_dir / "client.json").exists():  # written by harness.load.swarm as Locust stops
        raise LoadError(
            f"locust exited with {locust.returncode} and recorded nothing (does the locustfile "
            f"build on ratelimit_harness.harness.load.swarm.ApiUser?): {tail}"
        )


def _watch(
    locust: subprocess.Popen[bytes], swarm: Swarm, run_dir: Path, *, decided_on: str
) -> None:
    """Wait for Locust (a headless run at most its duration and a minute), printing progress:
    on a terminal one line, brought up to date every 2 s; in a log a line every 5 s."""
    began = time.monotonic()
    deadline = None if swarm.duration is None else began + swarm.duration + 60
    terminal = sys.stderr.isatty()
    shown = False
    decisions = Completions(run_dir, decided_on)
    with until_interrupted():
        try:
            while locust.poll() is None:
                try:
                    locust.wait(timeout=PROGRESS_ON_TERMINAL if terminal else PROGRESS_EVERY)
                except subprocess.TimeoutExpired:
                    line = progress(run_dir, time.monotonic() - began, decisions)
                    if terminal:  # back to the line's start, the rest of it cleared
                        print(f"\r{line}\x1b[K", end="", file=sys.stderr, flush=True)
                    else:
                        print(line, file=sys.stderr)
                    shown = True
                if deadline is not None and time.monotonic() > deadline:
                    raise LoadError("locust did not stop a minute after its run time")
        finally:
            if terminal and shown:
                print(file=sys.stderr)  # what follows (Ctrl-C's "stopping" too) starts a line


@contextlib.contextmanager
def until_interrupted() -> Iterator[None]:
    """Run the block until it ends or Ctrl-C or SIGTERM stops it; then go on (to judge)."""
    # both signals raise KeyboardInterrupt here, even where SIGINT was ignored at start (a job
    # started in the background by a script)
    handlers = {sig: signal.signal(sig, signal.default_int_handler) for sig in STOP_SIGNALS}
    try:
        yield
    except KeyboardInterrupt:
        print("stopping", file=sys.stderr)
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)


def progress(run_dir: Path, elapsed: float, decisions: Completions) -> str:
    """The progress line: the decisions the journals hold now (``decisions``), and the
    violations the live judge found so far."""
    live_file = run_dir / "live.json"
    if not live_file.exists():
        return f"{elapsed:5.0f} s: starting"
    rows = json.loads(live_file.read_text())["rules"]
    decided = sum(decisions.count(row["rule"]) for row in rows)
    found = [
        f"{row['rule']}: {row[kind]} {kind}"
        for row in rows
        for kind in ("over-admission", "wrongful-rejection")
        if row[kind]
    ]
    return f"{elapsed:5.0f} s: {decided:,} decisions; " + (
        "; ".join(found) or "no violation so far"
    )


def live_judge(run_dir: Path) -> Process:
    command = [sys.executable, "-m", "ratelimit_harness.harness.load.judge.live", str(run_dir)]
    return spawn("live-judge", command, run_dir / "logs")
