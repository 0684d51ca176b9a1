"""Threads a limiter starts, run as background actors of their instance: at the explorer's turn.

A limiter may start a thread of its own: a leak thread that trims old entries every few seconds
(pyrate-limiter's Leaker), a refresher, a flusher. Left alone, such a thread runs on real time,
whenever the operating system lets it, so whether its commands came before or after an
instance's decided the verdict, and two runs of one schedule could disagree.

A thread started in an instance's thread, or while its limiter is built, is *adopted* by that
instance (``adopting``): it becomes an actor of the run, named after both (``app-0~Leaker``).
An actor

- reads its instance's clock, as the instance does (``clocks.reading``);
- stops before each command, at a point of its own (it is gated, as the instance is: see wire);
- sleeps on virtual time: ``time.sleep``, ``asyncio.sleep`` and ``threading.Event.wait`` with a
  timeout return once the instance's clock has passed their end, not before.

The explorer lets actors run only between two actions of the schedule (``Background.settle``):
it waits until each actor is quiet (at a point, asleep, or ended), then lets the first that is
ready go (a point's command runs; a sleeper whose end has come wakes), and so on until none is
ready. So an actor's commands run at the first boundary after it reaches them, in the order the
actors were started, and a leak thread that sleeps 10 s runs again at the first boundary after
the schedule's time has moved 10 s: the same in every run of the schedule, each command in the
trace under the actor's name.

An actor that neither reaches a point nor sleeps within ``QUIET`` seconds (it waits on a queue,
a lock, a socket of its own) cannot be scheduled: it is noted once in the trace, and from then
on not waited for. When the run ends, every actor is ended: its next point or sleep raises
``RunOver`` (not an Exception, so a limiter's ``except Exception`` does not catch it).
"""

from __future__ import annotations

import asyncio
import concurrent.futures.thread
import contextlib
import contextvars
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ratelimit_harness.harness.explorer.clocks import InstanceClock, reading
from ratelimit_harness.harness.explorer.wire import gated

QUIET = 1.0  # seconds an actor may run before it is taken to block where nothing schedules it
TURNS = 100  # points an actor may pass at one boundary; the rest wait for the next
RUNNING, AT_POINT, ASLEEP, ENDED = "running", "at a point", "asleep", "ended"

Log = Callable[[Any, tuple[Any, ...], Any, float], None]  # (actor, command, reply, sent)
Note = Callable[[str, str], None]  # (actor's name, what happened)


class RunOver(BaseException):
    """Raised in an actor at its next point or sleep once its run is over: the thread ends."""


@dataclass(frozen=True)
class _Owner:
    """Who adopts the threads started here: the run's actors, for this instance."""

    background: Background
    instance: str
    clock: InstanceClock


_owner: contextvars.ContextVar[_Owner | None] = contextvars.ContextVar("owner", default=None)
_actor = threading.local()  # .actor: the Actor this thread is, in an actor's thread


class Actor:
    """One adopted thread (see the module's text). Its state is changed by its own thread and
    read by the explorer's, under ``changed``."""

    def __init__(self, name: str, clock: InstanceClock, log: Log, changed: threading.Condition):
        self.name = name
        self.clock = clock
        self._log = log
        self._changed = changed
        self.state = RUNNING
        self.due = 0.0  # asleep: the instant of its clock it wakes at
        self.since = time.monotonic()  # when it last began to run
        self.loose = False  # it blocked where nothing schedules it: not waited for any more
        self.over = False
        self.pending: tuple[Any, ...] | None = None  # at a point: the command it is about to send

    # --- the actor's thread ----------------------------------------------------------------

    def point(self, command: tuple[Any, ...]) -> None:
        """Before one of its commands: wait for the explorer's turn (wire's Gate)."""
        self.pending = command
        self._wait_turn(AT_POINT)
        self.pending = None

    def log(self, command: tuple[Any, ...], reply: Any, sent: float) -> None:
        self._log(self, command, reply, sent)

    def sleep(self, seconds: float) -> None:
        """Sleep ``seconds`` of its instance's clock."""
        self.due = self.clock() + max(seconds, 0.0)
        self._wait_turn(ASLEEP)

    def ended(self) -> None:
        with self._changed:
            self.state = ENDED
            self._changed.notify_all()

    def _wait_turn(self, state: str) -> None:
        with self._changed:
            if self.over:
                raise RunOver
            self.state = state
            self._changed.notify_all()
            while self.state == state and not self.over:
                self._changed.wait()
            if self.over:
                raise RunOver

    # --- the explorer's thread (``changed`` held) ------------------------------------------

    def ready(self) -> bool:
        """Whether it can go on now: at a point, or asleep past its end."""
        return self.state == AT_POINT or (self.state == ASLEEP and self.clock() >= self.due)

    def go(self) -> None:
        self.state, self.since = RUNNING, time.monotonic()
        self._changed.notify_all()


class Background:
    """The actors of one run (see the module's text)."""

    def __init__(self, log: Log, note: Note) -> None:
        self._log, self._note = log, note
        self._changed = threading.Condition()
        self.actors: list[Actor] = []

    @contextlib.contextmanager
    def owned_by(self, instance: str, clock: InstanceClock) -> Iterator[None]:
        """Threads started here (under ``adopting``) are ``instance``'s actors."""
        token = _owner.set(_Owner(self, instance, clock))
        try:
            yield
        finally:
            _owner.reset(token)

    def adopt(self, thread: threading.Thread, owner: _Owner) -> None:
        """Make ``thread``, about to start, an actor of ``owner.instance``."""
        name = "-".join(f"{owner.instance}~{thread.name}".split())
        actor = Actor(name, owner.clock, self._log, self._changed)
        run = thread.run

        def adopted() -> None:
            _actor.actor = actor
            try:
                with reading(owner.clock), gated(actor), self.owned_by(owner.instance, owner.clock):
                    run()
            except RunOver:
                pass
            finally:
                _actor.actor = None
                actor.ended()

        thread.run = adopted  # type: ignore[method-assign]
        with self._changed:
            self.actors.append(actor)

    def settle(self) -> None:
        """Let the actors run until none is ready: each in turn, once all are quiet."""
        turns = dict.fromkeys(self.actors, 0)
        with self._changed:
            while True:
                self._wait_quiet()
                ready = [a for a in self.actors if a.ready() and turns.get(a, 0) < TURNS]
                if not ready:
                    return
                turns[ready[0]] = turns.get(ready[0], 0) + 1
                ready[0].go()

    def close(self) -> None:
        """The run is over: every actor ends at its next point or sleep."""
        with self._changed:
            for actor in self.actors:
                actor.over = True
            self._changed.notify_all()

    def _wait_quiet(self) -> None:
        """Wait until no actor runs (one that runs ``QUIET`` s is let loose, and noted)."""
        while True:
            running = [a for a in self.actors if a.state == RUNNING and not a.loose]
            if not running:
                return
            now = time.monotonic()
            for actor in running:
                if now - actor.since >= QUIET:
                    actor.loose = True
                    self._note(
                        actor.name,
                        f"runs {QUIET:g} s without a command or a sleep (it waits where "
                        "nothing schedules it): not waited for from here on",
                    )
            self._changed.wait(QUIET / 10)


@contextlib.contextmanager
def adopting() -> Iterator[None]:
    """While active: threads started under ``Background.owned_by`` are adopted, and an actor's
    sleeps are on its virtual clock (see the module's text)."""
    patches: list[tuple[object, str, Callable[[Any], Any]]] = [
        (threading.Thread, "start", _start),
        (threading.Event, "wait", _event_wait),
        (time, "sleep", _sleep),
        (asyncio, "sleep", _asyncio_sleep),
    ]
    originals = [(owner, name, getattr(owner, name)) for owner, name, _ in patches]
    for owner, name, wrap in patches:
        setattr(owner, name, wrap(getattr(owner, name)))
    try:
        yield
    finally:
        for owner, name, original in originals:
            setattr(owner, name, original)


def _current() -> Actor | None:
    return getattr(_actor, "actor", None)


def _start(original: Callable[..., Any]) -> Callable[..., Any]:
    def start(self: threading.Thread) -> None:
        owner = _owner.get()
        if owner is not None and not _pool_worker(self):
            owner.background.adopt(self, owner)
        original(self)

    return start


def _pool_worker(thread: threading.Thread) -> bool:
    """Whether ``thread`` is a worker of a ``ThreadPoolExecutor`` (asyncio's default one looks
    up host names in it): it runs what its instance hands it and waits for, not a life of its
    own, so it is left alone."""
    return getattr(thread, "_target", None) is concurrent.futures.thread._worker


def _sleep(original: Callable[[float], None]) -> Callable[[float], None]:
    def sleep(seconds: float) -> None:
        actor = _current()
        if actor is None or not seconds:
            return original(seconds)
        return actor.sleep(seconds)

    return sleep


def _event_wait(original: Callable[..., bool]) -> Callable[..., bool]:
    def wait(self: threading.Event, timeout: float | None = None) -> bool:
        actor = _current()
        if actor is None or timeout is None or self.is_set():
            return original(self, timeout)
        actor.sleep(timeout)
        return self.is_set()

    return wait


def _asyncio_sleep(original: Callable[..., Any]) -> Callable[..., Any]:
    async def sleep(delay: float, result: Any = None) -> Any:
        actor = _current()
        if actor is not None and delay > 0:
            actor.sleep(delay)  # blocks the actor's own event loop, which only it uses
            delay = 0
        return await original(delay, result)

    return sleep
