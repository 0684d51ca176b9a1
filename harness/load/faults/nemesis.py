"""A load run's nemesis: faults done to the system under test while the swarm runs, on a
schedule, each one a marked event in the run directory.

``FAULTS`` is the table: each fault a name, what it needs, how it begins and how it ends.
``load --nemesis kill-redis,kill-instance --nemesis-every 5 --nemesis-for 2`` begins the first
fault 5 s after the swarm starts and ends it 2 s later, the next 5 s after the first began, and so
on, in turn, until the swarm stops. A fault slow to undo (an instance slow to start again) delays
the next, so that the system always has ``every - lasting`` seconds (3) without a fault: the
stretch in which each fault's recovery is measured. A fault still on when the swarm stops is
ended first, so the final verdict reads the Redis that is back. Each beginning and end is a line
of ``RUN_DIR/faults.jsonl`` (written and flushed as it happens, so a run killed mid-fault still
says so):

    {"fault": "kill-redis", "turn": 0, "phase": "start", "time": 1796136947.1, "detail": ""}
    {"fault": "kill-redis", "turn": 0, "phase": "end", "time": 1796136949.1, "detail": ""}

A fault that cannot be done or undone (Redis does not come back) is a line of phase ``error``
with the reason, and the nemesis stops there; the run goes on to its verdict.

Faults are done on one thread that lives as long as the process (``_HANDS``), not on the
schedule's: a process the harness starts dies with the thread that started it
(PR_SET_PDEATHSIG), so a Redis or an instance started again must not be started by a thread
that ends with the run.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from ratelimit_harness.harness.errors import HarnessError
from ratelimit_harness.harness.load.faults.proxy import FaultProxy
from ratelimit_harness.harness.load.system.clocks import InstanceClocks
from ratelimit_harness.harness.load.system.fleet import Fleet
from ratelimit_harness.harness.provision import RedisServer
from ratelimit_harness.harness.provision.base import ServerControl
from ratelimit_harness.harness.provision.cluster import fail_over, role_of

Target = TypeVar("Target")  # what a fault is done to: Redis, the fault proxy
FAULTS_FILE = "faults.jsonl"
NONE = "none"
_HANDS = ThreadPoolExecutor(max_workers=1, thread_name_prefix="nemesis-hands")


class NemesisError(HarnessError):
    """A nemesis that cannot run against this system: says which fault and why."""


@dataclass(frozen=True)
class Victims:
    """What the faults are done to."""

    server: RedisServer
    fleet: Fleet
    proxy: FaultProxy | None = None  # between the instances and Redis, for network faults

    @property
    def redis(self) -> ServerControl:
        if self.server.control is None:
            raise NemesisError("no control of this Redis")
        return self.server.control


@dataclass(frozen=True)
class LoadFault:
    name: str
    about: str
    needs: str  # "redis": a Redis the harness started; "instances": instances it started;
    # "clocks": instances it started, each on a clock of its own; "proxy": a fault proxy between
    # the instances and Redis; "cluster": a Redis Cluster the harness started, a replica each
    begin: Callable[[Victims, int], str]  # does it, on its turn; says to what
    end: Callable[[Victims, int], object]  # undoes it


def _doing(
    act: Callable[[Target], object], to: Callable[[Victims], Target]
) -> Callable[[Victims, int], str]:
    """A fault's doing (or undoing) that does ``act`` to what ``to`` finds, whoever's turn it is;
    it says nothing of what it was done to (there is one)."""

    def acting(victims: Victims, _: int) -> str:
        act(to(victims))
        return ""

    return acting


def _redis(victims: Victims) -> ServerControl:
    return victims.redis


def _kill_instance(victims: Victims, turn: int) -> str:
    instance = victims.fleet.instances[turn % len(victims.fleet.instances)]
    instance.kill()
    return instance.name


def _start_instance(victims: Victims, turn: int) -> None:
    victims.fleet.start_again(victims.fleet.instances[turn % len(victims.fleet.instances)])


SKEW_SECONDS = 0.5  # how far a skew fault moves an instance's clock, ahead then behind in turn


def _skewed(victims: Victims, turn: int) -> tuple[str, InstanceClocks]:
    if victims.fleet.clocks is None:
        raise NemesisError("the instances were not started on clocks of their own")
    instances = victims.fleet.instances
    return instances[turn % len(instances)].name, victims.fleet.clocks


def _skew_instance(victims: Victims, turn: int) -> str:
    name, clocks = _skewed(victims, turn)
    offset = SKEW_SECONDS if (turn // len(victims.fleet.instances)) % 2 == 0 else -SKEW_SECONDS
    clocks.set(name, offset)
    return f"{name} {offset:+.3f} s"


def _unskew_instance(victims: Victims, turn: int) -> None:
    name, clocks = _skewed(victims, turn)
    clocks.set(name, 0.0)


LATENCY_SECONDS = 0.05  # a latency fault holds each chunk this long, each way


def _proxy(victims: Victims) -> FaultProxy:
    if victims.proxy is None:
        raise NemesisError("the instances do not reach Redis through a fault proxy")
    return victims.proxy


def _fail_over(victims: Victims, turn: int) -> str:
    """The replica of one shard (each in turn) takes over from its primary."""
    server = victims.server
    if not server.replica_urls:
        raise NemesisError("the cluster has no replicas")
    shard = turn % len(server.replica_urls)
    pair = (server.node_urls[shard], server.replica_urls[shard])
    replica = next(url for url in pair if role_of(url) != "master")
    fail_over(replica)
    return f"shard {shard}: {replica} took over"


def _nothing(victims: Victims, turn: int) -> None:
    """A failover is done once done: the new primary stays."""


FAULTS = {
    fault.name: fault
    for fault in (
        LoadFault(
            "kill-redis",
            "SIGKILL of Redis; then it starts again on its port, empty",
            "redis",
            _doing(lambda redis: redis.kill(), _redis),
            _doing(lambda redis: redis.start(), _redis),
        ),
        LoadFault(
            "restart-redis",
            "SHUTDOWN NOSAVE; then it starts again on its port, empty",
            "redis",
            _doing(lambda redis: redis.shutdown(), _redis),
            _doing(lambda redis: redis.start(), _redis),
        ),
        LoadFault(
            "pause-redis",
            "SIGSTOP of Redis (every client waits or times out); then SIGCONT",
            "redis",
            _doing(lambda redis: redis.pause(), _redis),
            _doing(lambda redis: redis.resume(), _redis),
        ),
        LoadFault(
            "kill-instance",
            "SIGKILL of an app instance mid-request (each in turn); then it starts again",
            "instances",
            _kill_instance,
            _start_instance,
        ),
        LoadFault(
            "latency",
            f"every byte between the instances and Redis held {LATENCY_SECONDS * 1000:g} ms each "
            "way (a fault proxy); then none",
            "proxy",
            _doing(lambda proxy: proxy.delay(LATENCY_SECONDS), _proxy),
            _doing(lambda proxy: proxy.heal(), _proxy),
        ),
        LoadFault(
            "partition",
            "nothing passes between the instances and Redis (connections held, then cut); then "
            "it passes again",
            "proxy",
            _doing(lambda proxy: proxy.partition(), _proxy),
            _doing(lambda proxy: proxy.heal(), _proxy),
        ),
        LoadFault(
            "refuse",
            "Redis refuses every connection from the instances (each reset at once); then not",
            "proxy",
            _doing(lambda proxy: proxy.refuse(), _proxy),
            _doing(lambda proxy: proxy.heal(), _proxy),
        ),
        LoadFault(
            "failover",
            "CLUSTER FAILOVER: a shard's replica takes over from its primary (each shard in "
            "turn; --cluster, with a replica per primary); the new primary stays",
            "cluster",
            _fail_over,
            _nothing,
        ),
        LoadFault(
            "skew",
            f"an app instance's clock {SKEW_SECONDS:g} s ahead (each in turn; behind on the "
            "next round); then real time again",
            "clocks",
            _skew_instance,
            _unskew_instance,
        ),
    )
}


def needs(faults: tuple[LoadFault, ...], what: str) -> bool:
    """Whether any of these faults needs ``what`` ("clocks", "proxy")."""
    return any(fault.needs == what for fault in faults)


def parse_nemesis(text: str) -> tuple[LoadFault, ...]:
    """The faults ``--nemesis`` names (comma-separated; ``none``: no fault)."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    if names == [NONE] or not names:
        return ()
    unknown = [name for name in names if name not in FAULTS]
    if unknown:
        known = ", ".join([*FAULTS, NONE])
        raise NemesisError(f"unknown fault {unknown[0]!r} for --nemesis; known: {known}")
    return tuple(FAULTS[name] for name in dict.fromkeys(names))


def check_victims(
    faults: tuple[LoadFault, ...], *, ours: bool, cluster: bool, instances: bool
) -> None:
    """Refuse a fault this system cannot take, before the run starts: a Redis fault on a Redis
    the harness does not start (``ours`` false: a given URL) or a cluster, an instance fault
    where it starts no instance."""
    for fault in faults:
        if fault.needs == "cluster" and (not ours or not cluster):
            raise NemesisError(f"--nemesis {fault.name} needs --cluster (a cluster of its own)")
        if fault.needs == "redis" and (not ours or cluster):
            where = "a Redis Cluster" if cluster else "a Redis the harness did not start"
            raise NemesisError(f"--nemesis {fault.name} cannot be done to {where}")
        if fault.needs in ("instances", "clocks", "proxy") and not instances:
            raise NemesisError(f"--nemesis {fault.name} needs instances the harness started")
        if fault.needs == "proxy" and cluster:
            raise NemesisError(f"--nemesis {fault.name} cannot stand between a cluster's nodes")


@dataclass(frozen=True)
class Schedule:
    every: float  # seconds from one fault's beginning to the next's (the first: after one)
    lasting: float  # seconds each lasts

    def __post_init__(self) -> None:
        if not 0 < self.lasting < self.every:
            raise NemesisError(
                f"--nemesis-for ({self.lasting:g} s) must be more than 0 and less than "
                f"--nemesis-every ({self.every:g} s)"
            )


class Nemesis:
    """Runs ``faults`` in turn on ``schedule`` in a thread of its own, from ``start`` to
    ``stop``, into ``RUN_DIR/faults.jsonl``."""

    def __init__(
        self,
        faults: tuple[LoadFault, ...],
        victims: Victims,
        schedule: Schedule,
        run_dir: Path,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.faults, self.victims, self.schedule, self.clock = faults, victims, schedule, clock
        self.path = run_dir / FAULTS_FILE
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="nemesis", daemon=True)
        self._on: tuple[LoadFault, int] | None = None
        self._lock = threading.Lock()

    def start(self) -> Nemesis:
        if self.faults:
            self._thread.start()
        return self

    def stop(self) -> None:
        """No more faults; the one on now is ended (Redis back, the instance started)."""
        self._stopped.set()
        if self._thread.is_alive():
            self._thread.join(timeout=60)
        with self._lock:
            self._end()

    def __enter__(self) -> Nemesis:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    def _run(self) -> None:
        began = time.monotonic()
        healthy = self.schedule.every - self.schedule.lasting
        ended = -math.inf  # when the last fault was undone
        for turn in range(10**6):  # bounded by the run: each turn waits out its schedule
            fault = self.faults[turn % len(self.faults)]
            # on time, unless undoing the last took so long that the system would not get its
            # healthy stretch between faults (an instance slow to start again)
            at = max(began + self.schedule.every * (turn + 1), ended + healthy)
            if self._stopped.wait(max(0.0, at - time.monotonic())):
                return
            with self._lock:
                if not self._begin(fault, turn):
                    return
            if self._stopped.wait(self.schedule.lasting):
                return
            with self._lock:
                if not self._end():
                    return
            ended = time.monotonic()

    def _begin(self, fault: LoadFault, turn: int) -> bool:
        began = self.clock()  # a fault begins as it is done: what fails then is its doing
        try:
            detail = _HANDS.submit(fault.begin, self.victims, turn).result()
        except Exception as error:  # a fault that cannot be done: said, and no more faults
            self._write(fault, turn, "error", f"could not begin: {error}")
            self._stopped.set()
            return False
        self._on = (fault, turn)
        self._write(fault, turn, "start", detail, began)
        return True

    def _end(self) -> bool:
        if self._on is None:
            return True
        (fault, turn), self._on = self._on, None
        try:
            _HANDS.submit(fault.end, self.victims, turn).result()
        except Exception as error:  # it stays broken: said, and no more faults
            self._write(fault, turn, "error", f"could not end: {error}")
            self._stopped.set()
            return False
        self._write(fault, turn, "end", "")  # it ends once undone (Redis answers again)
        return True

    def _write(
        self, fault: LoadFault, turn: int, phase: str, detail: str, at: float | None = None
    ) -> None:
        record: dict[str, Any] = {
            "fault": fault.name,
            "turn": turn,
            "phase": phase,
            "time": self.clock() if at is None else at,
            "detail": detail,
        }
        with self.path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(record) + "\n")
