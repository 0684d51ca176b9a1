"""A service of the user's own as the system under test: ``load --service COMMAND`` starts N copies
of it, ``load --target URL,...`` drives copies already running.

Each copy started is its own OS process (group) with the harness's environment plus the line
protocol's (``limiters.program.program_env``: ``REDIS_URL``, ``RATELIMIT_POLICY``,
``RATELIMIT_INSTANCE``) and ``PORT``, the loopback port it must serve HTTP on; its output goes to
``RUN_DIR/logs/app-N.log``. It is ready once that port takes a connection (bounded: a copy that
exits first, or is still not listening after ``fleet.READY_TIMEOUT`` seconds, fails the run with its
log's last lines). Each copy runs under a guard (``guard``): the children it forks die with
the harness too, even one killed outright.

The service decides; the harness sees only what its clients saw (the status, 2xx or 429, and the
headers) and, afterwards, the keys it left in Redis: the judge reads the clients' journals as
the decisions (``harness.load.judge.final``).
"""

from __future__ import annotations

import shlex
import socket
from dataclasses import dataclass
from pathlib import Path

from ratelimit_harness.harness.errors import HarnessError
from ratelimit_harness.harness.load.system.clocks import InstanceClocks
from ratelimit_harness.harness.load.system.fleet import (
    Fleet,
    Process,
    ServeError,
    spawn,
    wait_until,
)
from ratelimit_harness.harness.load.system.guard import guarded
from ratelimit_harness.harness.provision.base import free_port
from ratelimit_harness.limiters.program import program_env


class ServiceError(HarnessError):
    """A copy of the user's service exited, or did not listen, before it was ready."""


@dataclass(frozen=True)
class Service:
    """What serves the requests: ``command`` started ``instances`` times, or ``targets``."""

    command: str | None = None
    targets: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """How reports name it."""
        return f"exec:{self.command}" if self.command else ", ".join(self.targets)


def start_service(
    run_dir: Path,
    service: Service,
    redis_url: str,
    policy: str,
    *,
    instances: int,
    host: str,
    clocks: InstanceClocks | None = None,
) -> Fleet:
    """The copies of ``service`` (none for targets), each answering on its port (each on its
    own clock of ``clocks``, if given)."""
    logs = run_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    ready = lambda p: _wait_listening(p, host)  # noqa: E731
    fleet = Fleet(run_dir, targets=list(service.targets), ready=ready, clocks=clocks)
    if service.command is None:
        return fleet
    argv = guarded(shlex.split(service.command))  # its children too die with the harness
    try:
        for number in range(instances):
            port = free_port()
            env = program_env(redis_url, policy, number) | {"PORT": str(port)}
            env |= clocks.env_for(f"app-{number}") if clocks else {}
            fleet.instances.append(spawn(f"app-{number}", argv, logs, env, port=port, host=host))
        for process in fleet.instances:
            fleet.ready(process)
    except ServeError as error:  # the user's own service failed, not the machine: bad input
        fleet.stop()
        raise ServiceError(str(error)) from None
    except BaseException:
        fleet.stop()
        raise
    return fleet


def _wait_listening(process: Process, host: str) -> None:
    port = int(process.url.rsplit(":", 1)[1])

    def listening() -> bool:
        with socket.create_connection((host, port), timeout=1):
            return True

    wait_until(process, listening, f"listen on $PORT ({port})")
