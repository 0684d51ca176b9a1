"""One simulated app instance: a thread with its own Redis connection and its own clock, that
stops before every round trip to Redis until the explorer lets it go.

The explorer (one thread) and the instance hand control back and forth, so exactly one of them
runs at a time and the interleaving is exactly the one the explorer chose.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import redis

from harness.explorer.clocks import InstanceClock, reading
from limiters import Decision, Limiter

TIMEOUT = 10.0  # seconds an instance may run between two points before the run is abandoned


class Crashed(Exception):
    """Raised inside an instance whose next command must never reach Redis."""


@dataclass(frozen=True)
class Pending:
    """An instance stopped before sending ``command`` (the args of one Redis command, or of a
    MULTI/EXEC block, which Redis runs atomically)."""

    command: tuple[Any, ...]


@dataclass(frozen=True)
class Finished:
    decision: Decision | None  # None: the call raised
    error: str = ""


@dataclass(frozen=True)
class Died:
    pass


Event = Pending | Finished | Died


class Instance:
    """Runs ``limiter.check(identity)`` calls one at a time when told, in its own thread."""

    def __init__(
        self, name: str, clock: InstanceClock, build: Callable[[Instance], Limiter]
    ) -> None:
        self.name = name
        self.clock = clock
        self._to_instance: queue.Queue[tuple[str, Any]] = queue.Queue()
        self._to_explorer: queue.Queue[Event] = queue.Queue()
        self.limiter = build(self)
        self.thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self.thread.start()

    # --- the explorer's side -------------------------------------------------------------

    def start(self, identity: str) -> Event:
        self._to_instance.put(("check", identity))
        return self._next()

    def go(self) -> Event:
        self._to_instance.put(("go", None))
        return self._next()

    def crash(self) -> Event:
        self._to_instance.put(("crash", None))
        return self._next()

    def stop(self) -> None:
        self._to_instance.put(("stop", None))
        self.thread.join(TIMEOUT)

    def _next(self) -> Event:
        try:
            return self._to_explorer.get(timeout=TIMEOUT)
        except queue.Empty:
            raise TimeoutError(f"{self.name} ran {TIMEOUT:.0f} s without reaching Redis") from None

    # --- the instance's side -------------------------------------------------------------

    def point(self, command: tuple[Any, ...]) -> None:
        """Called in the instance's thread before each round trip: wait for the explorer."""
        self._to_explorer.put(Pending(command))
        order, _ = self._to_instance.get()
        if order != "go":
            raise Crashed(self.name)

    def _serve(self) -> None:
        with reading(self.clock):
            while True:
                order, identity = self._to_instance.get()
                if order != "check":
                    if order == "crash":
                        self._to_explorer.put(Died())
                    return
                try:
                    decision = self.limiter.check(identity)
                except Crashed:
                    self._to_explorer.put(Died())
                    return
                except (redis.RedisError, OSError, ValueError, TypeError) as error:
                    self._to_explorer.put(Finished(None, f"{type(error).__name__}: {error}"))
                    continue
                self._to_explorer.put(Finished(decision))
