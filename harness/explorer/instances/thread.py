"""One simulated app instance: a thread with its own Redis connection and its own clock, that
stops before every round trip to Redis until the explorer lets it go.

The explorer (one thread) and the instance hand control back and forth, so exactly one of them
runs at a time and the interleaving is exactly the one the explorer chose. An asyncio limiter's
check runs in this thread too, on the limiter's own event loop (see ``limiters.plugin``): the
loop stops with the thread at each point, and its tasks made during a check are the instance's.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ratelimit_harness.harness.errors import HarnessError, described
from ratelimit_harness.harness.explorer.clocks.virtual import InstanceClock, reading
from ratelimit_harness.harness.explorer.instances.background import Background
from ratelimit_harness.harness.explorer.wire.intercept import gated
from ratelimit_harness.limiters import Decision, Limiter
from ratelimit_harness.limiters.base import check_args, refund_args

TIMEOUT = 10.0  # seconds an instance may run between two points before the run is abandoned


class Crashed(BaseException):
    """Raised inside an instance whose next command must never reach Redis. Not an Exception,
    so that a limiter that catches every Exception (to fail open, say) does not swallow it."""


class Stuck(HarnessError):
    """An instance ran ``TIMEOUT`` seconds without reaching Redis: its limiter blocks (a real
    sleep, a lock it never gets) where nothing can schedule it."""


class HarnessFault(BaseException):
    """The harness's own code failed inside a limiter's call (see ``ours``). Not an Exception,
    so that it passes through the limiter and is not taken for the limiter's failure."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


@contextlib.contextmanager
def ours() -> Iterator[None]:
    """Around the harness's code that runs inside a limiter's call (what follows each of its
    commands): an exception there ends the run with its cause (see Broke)."""
    try:
        yield
    except Exception as error:
        raise HarnessFault(error) from error


@contextlib.contextmanager
def _unowned(instance: str, clock: InstanceClock) -> Iterator[None]:
    """Threads started in an instance that has no background: left alone."""
    yield


@dataclass(frozen=True)
class Pending:
    """An instance stopped before sending ``command`` (the args of one Redis command, or of a
    MULTI/EXEC block, which Redis runs atomically)."""

    command: tuple[Any, ...]


@dataclass(frozen=True)
class Finished:
    decision: Decision | None  # None: the call raised, or answered what is not a decision
    error: str = ""  # then (or after Checked, the give-back raised): the exception, in one line


@dataclass(frozen=True)
class Checked:
    """An admitted request about to be given back: its check has answered ``decision``, and
    the instance goes on into ``refund`` (whose commands are points, as the check's were)."""

    decision: Decision


@dataclass(frozen=True)
class Died:
    pass


@dataclass(frozen=True)
class Broke:
    """The instance's thread ended on an exception nothing expected (a bug of the harness, say):
    the explorer raises it at once, with its traceback, instead of waiting on a thread that is
    gone."""

    error: BaseException


Event = Pending | Finished | Checked | Died


class Instance:
    """Runs ``limiter.check(identity)`` calls (``check(identity, cost)`` for a request that
    costs more than 1) one at a time when told, in its own thread. A request told to give back
    goes on, once admitted, into ``limiter.refund(identity, decision)`` (``Checked`` between)."""

    def __init__(
        self,
        name: str,
        clock: InstanceClock,
        build: Callable[[Instance], Limiter],
        log: Callable[[Instance, tuple[Any, ...], Any, float], None],
        background: Background | None = None,
    ) -> None:
        """``background``: the run's actors, which adopt the threads the limiter starts in
        this instance's thread (see background)."""
        self.name = name
        self._background = background
        self.clock = clock
        self._log = log
        self._to_instance: queue.Queue[tuple[str, Any]] = queue.Queue()
        self._to_explorer: queue.Queue[Event | Broke] = queue.Queue()
        self.limiter = build(self)
        self.gone = False  # the thread broke or is stuck: it will never answer again
        self.thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self.thread.start()

    # --- the explorer's side -------------------------------------------------------------

    def start(self, identity: str, cost: int = 1, give_back: bool = False) -> Event:
        self._to_instance.put(("check", (identity, cost, give_back)))
        return self._next()

    def more(self) -> Event:
        """What the request does next, after ``Checked``: it goes on by itself."""
        return self._next()

    def go(self) -> Event:
        self._to_instance.put(("go", None))
        return self._next()

    def crash(self) -> Event:
        self._to_instance.put(("crash", None))
        return self._next()

    def stop(self) -> None:
        self._to_instance.put(("stop", None))
        if not self.gone:
            self.thread.join(TIMEOUT)

    def _next(self) -> Event:
        if self.gone:  # asked again while the run ends: nothing more will come
            return Died()
        try:
            event = self._to_explorer.get(timeout=TIMEOUT)
        except queue.Empty:
            self.gone = True
            raise Stuck(f"{self.name} ran {TIMEOUT:.0f} s without reaching Redis") from None
        if isinstance(event, Broke):
            self.gone = True
            raise event.error
        return event

    # --- the instance's side -------------------------------------------------------------

    def point(self, command: tuple[Any, ...]) -> None:
        """Called in the instance's thread before each round trip: wait for the explorer."""
        self._to_explorer.put(Pending(command))
        order, _ = self._to_instance.get()
        if order != "go":
            raise Crashed(self.name)

    def log(self, command: tuple[Any, ...], reply: Any, sent: float) -> None:
        """Called in the instance's thread once Redis answered ``command``."""
        self._log(self, command, reply, sent)

    def _serve(self) -> None:
        try:
            self._loop()
        except HarnessFault as fault:
            self._to_explorer.put(Broke(fault.error))
        except BaseException as error:  # the explorer raises it: see Broke
            self._to_explorer.put(Broke(error))

    def _loop(self) -> None:
        owned = self._background.owned_by if self._background else _unowned
        with reading(self.clock), gated(self), owned(self.name, self.clock):
            while True:
                order, request = self._to_instance.get()
                if order != "check":
                    if order == "crash":
                        self._to_explorer.put(Died())
                    return
                identity, cost, give_back = request
                try:  # a request of cost 1 is asked as every limiter takes it
                    decision = self.limiter.check(*check_args(identity, cost))
                except Crashed:
                    self._to_explorer.put(Died())
                    return
                except Exception as error:  # the limiter's failure: an outcome, not the end
                    self._to_explorer.put(Finished(None, described(error)))
                    continue
                refund = getattr(self.limiter, "refund", None)
                if give_back and decision.allowed and callable(refund):
                    self._to_explorer.put(Checked(decision))
                    try:
                        refund(*refund_args(identity, decision, cost))
                    except Crashed:
                        self._to_explorer.put(Died())
                        return
                    except Exception as error:  # the give-back failed: it may have counted
                        self._to_explorer.put(Finished(decision, described(error)))
                        continue
                self._to_explorer.put(Finished(decision))
