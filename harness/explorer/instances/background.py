"""Threads a limiter starts, run as background actors of their instance: at the explorer's turn.

A limiter may start a thread of its own: a leak thread that trims old entries every few seconds
(pyrate-limiter's Leaker), a refresher, a flusher. Left alone, such a thread runs on real time,
whenever the operating system lets it, so whether its commands came before or after an
instance's decided the verdict, and two runs of one schedule could disagree.

A thread started in an instance's thread, or while its limiter is built, is *adopted* by that
instance (``adopting``): it becomes an actor of the run, named after both (``app-0~Leaker``).
An actor

- reads its instance's clock, as the instance does (``virtual.reading``);
- stops before each command, at a point of its own (gated as the instance is: see ``intercept``);
- sleeps on virtual time: ``time.sleep``, ``asyncio.sleep`` and ``threading.Event.wait`` with a
  timeout return once the instance's clock has passed their end, not before.

The explorer lets actors run only between two actions of the schedule (``Background.settle``):
it waits until each actor is quiet (at a point, asleep, or ended), then lets the first that is
ready go (a point's command runs; a sleeper whose end has come wakes), and so on until none is
ready. So an actor's commands run at the first boundary after it reaches them, in the order the
actors were started, and a leak thread that sleeps 10 s runs again at the first boundary after
the schedule's time has moved 10 s: the same in every run of the schedule, each command in the
trace under the actor's name.

An async factory may start asyncio tasks that outlive it (a loop that trims old entries every
few seconds). Left alone, such a task would run whenever the limiter's event loop runs, that is
inside some check, as real time lets it. A task the factory starts (not a Redis client's or
asyncio's own helper) is adopted too, as a ``TaskActor``: it begins at its first turn, and at
each point and each sleep it waits on a future of its loop that only the explorer resolves, so
it never runs inside a check. The explorer runs that loop for it, in a thread of its own, at a
boundary where the instance is between requests (its loop idle), until the task waits again.
The tasks it starts in turn go with it, under its name (it awaits them, as a rule). At the
run's end the limiter's loop is closed, and its tasks cancelled.

An actor that neither reaches a point nor sleeps within ``QUIET`` seconds (it waits on a queue,
a lock, a socket of its own) cannot be scheduled: it is noted once in the trace, and from then
on not waited for. When the run ends, every thread actor is ended: its next point or sleep
raises ``RunOver`` (not an Exception, so a limiter's ``except Exception`` does not catch it).
"""

from __future__ import annotations

import asyncio
import concurrent.futures.thread
import contextlib
import contextvars
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from dataclasses import dataclass
from typing import Any

from ratelimit_harness.harness.errors import described
from ratelimit_harness.harness.explorer.clocks.virtual import (
    NOT_THE_LIMITERS,
    InstanceClock,
    reading,
)
from ratelimit_harness.harness.explorer.wire.intercept import gate_to, gated
from ratelimit_harness.limiters.plugin import in_a_build

QUIET = 1.0  # seconds an actor may run before it is taken to block where nothing schedules it
TURNS = 100  # points an actor may pass at one boundary; the rest wait for the next
RUNNING, AT_POINT, ASLEEP, ENDED = "running", "at a point", "asleep", "ended"
NEW = "not begun"  # a task made and not yet run: it runs to its first point or sleep

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
# in an adopted task: the TaskActor it is (set in the task's own context)
_task_actor: contextvars.ContextVar[TaskActor | None] = contextvars.ContextVar(
    "task_actor", default=None
)
_real_asyncio_sleep = asyncio.sleep  # the explorer's own waits on a task's loop


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


class TaskActor:
    """One adopted asyncio task (see the module's text). It parks on a future of its loop at
    each point and sleep; ``go`` wakes it and runs the loop (in a thread of the explorer's) until
    it parks again, ends, or has run ``QUIET`` seconds."""

    def __init__(self, name: str, clock: InstanceClock, log: Log, note: Note, loop: Any):
        self.name, self.clock, self._log, self._note, self.loop = name, clock, log, note, loop
        self.task: asyncio.Task[Any] | None = None  # set once it is made
        self.state = NEW
        self.due = 0.0  # asleep: the instant of its clock it wakes at
        self.loose = False  # it waited where nothing schedules it: not run again
        self.over = False
        self.pending: tuple[Any, ...] | None = None  # at a point: the command it is about to send
        self._wake: asyncio.Future[None] | None = None

    # --- the task (on its loop) ------------------------------------------------------------

    async def run(self, coroutine: Coroutine[Any, Any, Any]) -> Any:
        """The task's coroutine, begun at its first turn, not as it is made (inside the
        build, on real time)."""
        try:
            await self._park(NEW)
        except BaseException:
            coroutine.close()  # never begun: nothing of it runs
            raise
        return await coroutine

    def point(self, command: tuple[Any, ...]) -> Awaitable[None]:
        """Before one of its commands: what its connection awaits (wire_asyncio)."""
        self.pending = command
        return self._park(AT_POINT)

    def log(self, command: tuple[Any, ...], reply: Any, sent: float) -> None:
        self._log(self, command, reply, sent)

    async def sleep(self, seconds: float) -> None:
        self.due = self.clock() + max(seconds, 0.0)
        await self._park(ASLEEP)

    async def _park(self, state: str) -> None:
        self.state, self._wake = state, self.loop.create_future()
        await self._wake  # cancelled when the limiter closes its loop, at the run's end
        self.pending = None

    # --- the explorer's thread -------------------------------------------------------------

    def ready(self) -> bool:
        """Whether it can go on now: its loop idle (its instance between requests), and it
        new, at a point, or asleep past its end."""
        if self.over or self.loose or self.loop.is_closed() or self.loop.is_running():
            return False
        due = self.state == ASLEEP and self.clock() >= self.due
        return self.state in (NEW, AT_POINT) or due

    def go(self) -> None:
        wake, self._wake = self._wake, None
        self.state = RUNNING
        if wake is not None and not wake.done():
            wake.set_result(None)
        deadline = self.loop.time() + QUIET  # the limiter's loop keeps real time

        def run() -> None:  # in a thread of its own: the explorer's own commands pass unseen
            with reading(self.clock):
                self.loop.run_until_complete(self._until_parked(deadline))

        runner = threading.Thread(target=run, name=self.name, daemon=True)
        runner.start()
        runner.join()
        if self.task is not None and self.task.done():
            self.state = ENDED
            error = None if self.task.cancelled() else self.task.exception()
            if error is not None:
                self._note(self.name, f"ends on {described(error)}")
        elif self.state == RUNNING:
            self.loose = True
            self._note(
                self.name,
                f"runs {QUIET:g} s without a command or a sleep (it waits where nothing "
                "schedules it): not run again",
            )

    async def _until_parked(self, deadline: float) -> None:
        task = self.task
        while self.state == RUNNING and not (task is not None and task.done()):
            if self.loop.time() >= deadline:
                return
            await _real_asyncio_sleep(0.0005)


class Background:
    """The actors of one run (see the module's text)."""

    def __init__(self, log: Log, note: Note) -> None:
        self._log, self._note = log, note
        self._changed = threading.Condition()
        self.actors: list[Actor | TaskActor] = []

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

    def adopt_task(
        self, owner: _Owner, loop: Any, named: str | Coroutine[Any, Any, Any]
    ) -> TaskActor:
        """A task about to be made on ``loop``: ``owner.instance``'s, named after its given
        name, else its coroutine's."""
        if isinstance(named, str):
            name = named
        else:
            name = getattr(named, "__qualname__", "task").rpartition(".")[2]
        actor = TaskActor(f"{owner.instance}~{name}", owner.clock, self._log, self._note, loop)
        with self._changed:
            self.actors.append(actor)
        return actor

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
            running = [
                a
                for a in self.actors
                if isinstance(a, Actor) and a.state == RUNNING and not a.loose
            ]
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
        (asyncio.BaseEventLoop, "create_task", _create_task),
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


def _helper(coroutine: Any) -> bool:
    """Whether ``coroutine`` is a Redis client's or the standard library's own (a command's
    timeout, a gather): a step of whatever awaits it, not a task of the limiter's."""
    frame = getattr(coroutine, "cr_frame", None)
    module = frame.f_globals.get("__name__", "") if frame is not None else ""
    return module.partition(".")[0] in NOT_THE_LIMITERS


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
        actor, task_actor = _current(), _task_actor.get()
        if task_actor is not None and delay > 0:
            await task_actor.sleep(delay)
            delay = 0
        elif actor is not None and delay > 0:
            actor.sleep(delay)  # blocks the actor's own event loop, which only it uses
            delay = 0
        return await original(delay, result)

    return sleep


def _create_task(original: Callable[..., Any]) -> Callable[..., Any]:
    def create_task(loop: Any, coroutine: Any, **options: Any) -> Any:
        """A task an async factory makes as the limiter is built (not a client's or asyncio's
        helper) is a TaskActor of the instance: its context says so, and the actor is its gate.
        The tasks it makes in turn share its context, so its gate: it awaits them, as a rule."""
        owner = _owner.get()
        if owner is None or _task_actor.get() or not in_a_build() or _helper(coroutine):
            return original(loop, coroutine, **options)  # (a task's helpers go with it)
        actor = owner.background.adopt_task(owner, loop, options.get("name") or coroutine)
        context = options.pop("context", None) or contextvars.copy_context()
        context.run(_task_actor.set, actor)
        context.run(gate_to, actor)
        actor.task = original(loop, actor.run(coroutine), context=context, **options)
        return actor.task

    return create_task
