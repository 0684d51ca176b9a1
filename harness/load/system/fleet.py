"""The system under test, started: N app instances and the SMS provider, each its own OS process
on a free loopback port, all journalling into one run directory.

An instance is ``granian --interface asgi --workers 1`` running ``harness.load.system.app``.
Measured on this project's 2-core machine with wrk (``bench/load_speed.py``), granian serves the
same Starlette app with the same middleware 1.4 times as fast as uvicorn (3 times on a bare
endpoint), so the instances are never what limits a Locust swarm (which tops out at 5-7k
requests/s here). One worker per instance keeps "an instance" one process tree that can be
killed alone, as a crashed node is.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from ratelimit_harness.harness.load.contract.rules import Rules
from ratelimit_harness.harness.load.system.app import InstanceSettings
from ratelimit_harness.harness.load.system.clocks import InstanceClocks
from ratelimit_harness.harness.parent_death import die_with_parent
from ratelimit_harness.harness.provision.base import Unavailable, free_port

READY_TIMEOUT = 30.0


class ServeError(Unavailable):
    """A process of the system under test did not start; the message holds its log's tail."""


@dataclass
class Process:
    name: str
    url: str
    popen: subprocess.Popen[bytes]
    log: Path
    command: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)  # what it was given beyond ours

    def alive(self) -> bool:
        return self.popen.poll() is None

    def start_again(self) -> None:
        """Start it anew as it was started (after a crash), its output added to its log."""
        self.stop()
        with self.log.open("ab") as out:
            self.popen = _popen(self.command, out, self.env)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 10.0) -> None:
        """Signal the whole process tree (the server and its workers), then wait."""
        if not self.alive():
            return
        try:
            os.killpg(self.popen.pid, sig)
        except ProcessLookupError:
            return
        try:
            self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait()

    def kill(self) -> None:
        """Kill it outright, as a crash would: requests in flight never complete."""
        self.stop(signal.SIGKILL)

    def tail(self, lines: int = 5) -> str:
        text = self.log.read_text(errors="replace").strip().splitlines()
        return " | ".join(text[-lines:])


@dataclass
class Fleet:
    """The running system: the instances (round-robin targets) and the provider; ``targets``,
    instances running already, not started here."""

    run_dir: Path
    instances: list[Process] = field(default_factory=list)
    provider: Process | None = None
    targets: list[str] = field(default_factory=list)
    ready: Callable[[Process], None] = lambda _: None  # returns once an instance answers
    clocks: InstanceClocks | None = None  # the instances' own clocks, when they may be skewed

    @property
    def urls(self) -> list[str]:
        return [p.url for p in self.instances] + self.targets

    def start_again(self, instance: Process) -> None:
        """Start a killed instance again, on its port; return once it answers."""
        instance.start_again()
        self.ready(instance)

    def stop(self) -> None:
        for process in [*self.instances, *filter(None, [self.provider])]:
            process.stop()

    def __enter__(self) -> Fleet:
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()


def start_fleet(
    run_dir: Path,
    rules: Rules,
    redis_url: str,
    instances: int,
    *,
    tag: str,
    cluster: bool = False,
    host: str = "127.0.0.1",
    clocks: InstanceClocks | None = None,
) -> Fleet:
    """Start the provider and ``instances`` app instances (listening on ``host``; each on its
    own clock of ``clocks``, if given); return once every one answers."""
    logs = run_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    (run_dir / "rules.json").write_text(rules.to_json())
    fleet = Fleet(run_dir, ready=_wait_ready, clocks=clocks)
    try:
        port = free_port()
        fleet.provider = spawn(
            "sms-provider",
            [
                *(sys.executable, "-m", "ratelimit_harness.harness.load.system.sms_provider"),
                *("--port", str(port), "--record", str(run_dir / "provider.jsonl")),
            ],
            logs,
            port=port,
        )
        for index in range(instances):
            port = free_port()
            settings = InstanceSettings(
                f"app-{index}", rules, redis_url, str(run_dir), fleet.provider.url, tag, cluster
            )
            command = instance_command(host, port)
            env = settings.to_env() | (clocks.env_for(settings.name) if clocks else {})
            fleet.instances.append(spawn(settings.name, command, logs, env, port=port, host=host))
        for process in [fleet.provider, *fleet.instances]:
            _wait_ready(process)
    except BaseException:
        fleet.stop()
        raise
    return fleet


def instance_command(host: str, port: int) -> list[str]:
    """One app instance: granian, one worker, serving ``harness.load.system.app``."""
    return [
        *(sys.executable, "-m", "granian", "--interface", "asgi", "--workers", "1"),
        *("--host", host, "--port", str(port), "--no-ws"),
        *("--log-level", "warning"),
        *("--factory", "ratelimit_harness.harness.load.system.app:create_app"),
    ]


def spawn(
    name: str,
    command: list[str],
    logs: Path,
    env: dict[str, str] | None = None,
    *,
    port: int | None = None,
    host: str = "127.0.0.1",
) -> Process:
    """Start ``command`` in its own process group, its output in ``logs/NAME.log``; it dies
    with this process. ``host`` and ``port``: where it will serve, for its URL."""
    log = logs / f"{name}.log"
    with log.open("wb") as out:
        popen = _popen(command, out, env or {})
    url = f"http://{host}:{port}" if port else ""
    return Process(name, url, popen, log, list(command), dict(env or {}))


def _popen(command: list[str], out: IO[bytes], env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        command,
        stdout=out,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env={**os.environ, **env},
        start_new_session=True,  # its own process group: stopped and killed as one
        preexec_fn=die_with_parent,  # noqa: PLW1509 (only prctl, which is async-signal-safe)
    )


def _wait_ready(process: Process) -> None:
    def healthy() -> bool:
        with urllib.request.urlopen(f"{process.url}/healthz", timeout=1) as answer:
            return bool(answer.status == 200)

    wait_until(process, healthy, "answer /healthz")


def wait_until(process: Process, ready: Callable[[], bool], doing: str) -> None:
    """Return once ``ready()`` says so (an OSError from it: not yet); ServeError, with the log's
    last lines, if the process exits first or ``READY_TIMEOUT`` seconds pass (``doing``: what
    it was waited for, for the message)."""
    deadline = time.monotonic() + READY_TIMEOUT
    while True:
        if not process.alive():
            raise ServeError(
                f"{process.name} exited with {process.popen.returncode} before it would "
                f"{doing}: {process.tail() or 'no output'}"
            )
        try:
            if ready():
                return
        except OSError:  # urllib's URLError too
            pass
        if time.monotonic() > deadline:
            raise ServeError(
                f"{process.name} did not {doing} in {READY_TIMEOUT:.0f} s: "
                f"{process.tail() or 'no output'}"
            )
        time.sleep(0.1)
