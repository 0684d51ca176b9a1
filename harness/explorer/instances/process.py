"""An app instance that is an OS process: a limiter program on the line protocol
(``limiters.program``), every command it sends held at a scheduling proxy of its own
(``proxy``), its clock a file of its own (``process_clock``).

It answers the explorer as the thread ``Instance`` does (``start``, ``go``, ``crash``, each
returning what the instance did next): after the explorer lets it go, the program runs until
it is at a point (the proxy holds its next command: ``Pending``), answers (``Finished``) or
ends (``Died``); waiting for one of those, bounded by ``TIMEOUT``, keeps the run serial.

Its clock file holds the instance's clock (the run's virtual time plus its skew), written each
time before the program runs, so the program reads the time the schedule says: the time of
day and monotonic clocks alike, in every runtime (``Date.now()``, ``process.hrtime()`` and
``performance.now()`` in Node; ``time.time()`` and ``time.monotonic()`` in Python;
``time.Now()`` in Go; ``System.currentTimeMillis()`` and ``System.nanoTime()`` in Java): the
program runs on a ``process_clock.ProcessClock``, its vDSO's clock functions reading the file.
Its timers run on that clock too: one fires only once virtual time has passed its due time.
Where a program's clock cannot be controlled (``process_clock.probe``), a race refuses it
before it starts, unless the user allows a real clock: then it runs on real time.

A monotonic clock must never go back below the instant the program booted at (Node aborts:
``Assertion failed: (now) >= (timer_base())``), yet each run begins at the same instant and
programs outlive runs. So a program boots at ``BOOT``, an instant far below any a run shows,
and its clock file moves to the run's time only once the program has booted: it waits for its
first request with nothing on its way to Redis (``waiting``; see ``_on_time``).

A crash cuts the program off while its next command is held: the command never reaches Redis
in the run. Where the next run flushes what it sends, the program lives on, held, and is let
finish its request once the run is over (``drain``, below); elsewhere it is killed (a SIGKILL;
the proxy drops what it holds).

A request is through when the program has answered and what it sent before its answer is
through too. The answer line read, the proxy is settled first (``SchedulingProxy.settle``): a
command the program wrote before it answered and did not wait for (@fastify/rate-limit 8.0's
fire-and-forget PEXPIRE) is held by then, and the answer waits behind it. The instance is at
that command's point (``Pending``) as if the program had awaited it, and ``Finished`` comes once
nothing is held any more: such a trailing command is a step of its own request, in its lane of
the trace before the decision; other instances may go before it, time may pass (a stall), and a
crash drops it (the request then died with the process, its answer lost). Why the answer is
not counted first: the explorer sees a program's sockets and its stdout through two threads, so
a command held before the answer is read cannot be told from one the program awaits; counted
after its commands, the answer comes at the same place whichever the explorer saw first, and a
schedule runs the same each time. A command written after the answer line is caught when it
comes within ``TRAILING_GRACE`` (and after each trailing command released); one later than that
is held into the instance's next request, after time the schedule may have let pass.

Programs outlive runs: starting one costs tens of milliseconds (Python; about 100 ms for Node
on ioredis), more than a schedule takes, so a run takes its instances from ``POOL`` and gives
back those still alive and at rest (no request inside, nothing held); the next run of the same
program, policy and Redis goes on with them, on a flushed database. So what a program keeps in
its own memory (a cache, a counter of its own) lives across schedules: the explorer judges each
run by its own history, and a limiter whose decisions hang on such memory can be judged wrongly.
``POOL.close()`` ends them all (also at exit).

Two things spare a start. A request still inside at a schedule's end, or cut off by a crash,
is, for the run, one that never comes back (its next command never sent); once the run has read
what it judges from Redis, the program is let finish it (``drain``: what it holds released,
unseen by any run, until it answers), on a database the next run flushes, and goes back to the
pool at rest. Only on a database the harness may flush (``Setup.flush``): elsewhere those
commands would leave keys no run removes, and the instance is killed instead. Measured on
``fixed-window-setnx-incr.js``, a search of 474 schedules started 103 programs when each crash
killed one, 2 when crashes only cut them off, and took a quarter of the time. And a program
killed or ended is replaced by a spare: the first time a program of a pool key must be started
anew, ``SPARES`` copies are started beside its replacement, in the background, and from then on
each start anew takes the oldest (booted by then, as a rule) and starts another. A spare's
commands that are steps wait at its proxy as any program's do; what passes (a client's
handshake, its ready check) reaches Redis on its proxy's connections, which a run counts as seen
(``Pool.upstream_addresses``).
"""

from __future__ import annotations

import atexit
import itertools
import shutil
import subprocess
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ratelimit_harness.harness.errors import ClockUncontrolled, HarnessError
from ratelimit_harness.harness.explorer.clocks.virtual import InstanceClock
from ratelimit_harness.harness.explorer.instances.thread import (
    TIMEOUT,
    Checked,
    Died,
    Event,
    Finished,
    Pending,
    Stuck,
)
from ratelimit_harness.harness.explorer.instances.waiting import wait_until_waiting, waiting
from ratelimit_harness.harness.explorer.server.keys import real_now
from ratelimit_harness.harness.explorer.wire.proxy import Held, SchedulingProxy
from ratelimit_harness.harness.process_clock import ClockFile, ProcessClock, probe
from ratelimit_harness.harness.provision.virtual_time import START
from ratelimit_harness.limiters import Policy
from ratelimit_harness.limiters.decision import Decision
from ratelimit_harness.limiters.program import (
    GIVEN_BACK,
    Answer,
    Program,
    ProgramError,
    asked,
    given_back,
    program_env,
)

Log = Callable[[Any, tuple[Any, ...], Any, float], None]
# seconds an answered request's proxy goes on turning, once settled, for a command the program
# sends just after its answer (the second guard; see the module's text): paid by every request
TRAILING_GRACE = 0.0002
IDLE = 1.0  # seconds a program may wait for neither Redis nor its input before it is Stuck
DRAINED = 1000  # steps a drained request may take before its program is killed instead
SPARES = 2  # spares kept booting per pool key, once one of its programs had to start anew
# the instant a program boots at: 20 years before runs begin, below any instant a run shows an
# instance, whatever its skew (see the module's text)
BOOT = START - 20 * 365 * 86400
_started = itertools.count()  # programs started, for their clock files' names


class ProcessInstance:
    """One copy of ``command``, instance number ``number`` of the run (see the module's text)."""

    limiter = None  # nothing of it lives in the explorer's process

    def __init__(
        self,
        name: str,
        number: int,
        clock: InstanceClock,
        *,
        command: str,
        policy: Policy,
        url: str,
        log: Log,
        folder: Path,
    ) -> None:
        self.name, self.clock, self._log = name, clock, log
        self.gone = False  # the program ended: it will never answer again
        self._woken = threading.Event()
        self.proxy = SchedulingProxy(url, on_held=lambda _: self._woken.set()).start()
        self.clock_file = ClockFile.create(folder, f"{name}-{next(_started)}.now")
        self._shown = self._monotonic = BOOT  # the instants its clock file holds
        self._tracer: ProcessClock | None = None  # the program's, where its clock is ours
        env = program_env(self.proxy.url, policy, number)
        self.stderr = folder / f"{name}.stderr"
        self._command, self._env = command, env
        try:
            self.program = self._start()
        except ProgramError:
            self.proxy.close()
            raise
        self._held: Held | None = None
        self._answered: Finished | None = None  # an answer waiting behind trailing commands
        self._giving: tuple[str, int] | None = None  # the request to give back, once admitted
        self._giving_back: Decision | None = None  # the admission being given back
        self._ended = False  # the program exited by itself: started again for the next request

    # --- the explorer's side, as Instance's ----------------------------------------------

    def start(self, identity: str, cost: int = 1, give_back: bool = False) -> Event:
        self._giving = (identity, cost) if give_back else None
        if self._ended:
            self.program, self._ended = self._start(), False
        self._on_time(at_rest=True)
        try:
            self.program.ask(asked(identity, cost))
        except ProgramError as error:
            return self._exited(error)
        return self._next()

    def more(self) -> Event:
        """What the request does next, after ``Checked``: the give-back goes on."""
        return self._next()

    def go(self) -> Event:
        held, self._held = self._held, None
        assert held is not None, "go() without a command held"
        self._on_time(at_rest=False)
        sent = real_now()  # real, as the wire's: a Redis on real time counts TTLs from it
        reply = self.proxy.release(held)
        self._log(self, held.command, reply, sent)
        return self._next()

    def crash(self) -> Event:
        self.proxy.kill()  # first: what is held never reaches Redis
        self.program.kill()
        self.gone, self._answered, self._giving, self._giving_back = True, None, None, None
        return Died()

    def stop(self) -> None:
        self.program.kill()
        self.proxy.close()
        self.clock_file.path.unlink(missing_ok=True)

    def drain(self) -> None:
        """Let the request inside finish, unseen by any run: each command held released to
        Redis, until the program answers with nothing held. One that does not within
        ``DRAINED`` steps and ``TIMEOUT`` seconds, or whose proxy fails, is killed: not at rest,
        it is started anew."""
        if self.gone:
            return
        self._log, self._giving = _unlogged, None  # finished unseen: no give-back begun now
        deadline = time.monotonic() + TIMEOUT
        try:
            for _ in range(DRAINED):
                if self._held is None and self._giving_back is None:
                    return  # it answered, and nothing of it is held
                if self._held is None:  # a give-back asked: its first point, or its answer
                    self._next()
                else:
                    self.go()
                if time.monotonic() > deadline:
                    break
        except (HarnessError, ProgramError):
            pass
        self.crash()

    def at_rest(self) -> bool:
        """Alive, no request inside, nothing held: fit for the next run."""
        alive = not self.gone and not self._ended and self.program.alive()
        quiet = self._answered is None and self._giving_back is None  # no answer still due
        return alive and quiet and not self.proxy.held()

    def join(self, clock: InstanceClock, log: Log) -> None:
        """Go on in a new run: its clock, its trace."""
        self.clock, self._log, self._held, self._answered = clock, log, None, None
        self._giving = self._giving_back = None
        self._on_time(at_rest=True)

    # ---------------------------------------------------------------------------------------

    def _start(self) -> Program:
        """The program started anew, booting at ``BOOT`` (see the module's text)."""
        self.clock_file.set_seconds(BOOT)
        self._shown = self._monotonic = BOOT
        self._tracer = None if probe() else ProcessClock(self.clock_file)
        spawn = self._tracer.spawn if self._tracer else subprocess.Popen
        woken = self._woken.set
        return Program(self._command, self._env, stderr=self.stderr, on_output=woken, spawn=spawn)

    def _on_time(self, *, at_rest: bool) -> None:
        """The program's clock file says the instance's time before the program runs on; the
        first time, once it has booted (``TIMEOUT`` at most): it waits, with nothing on its way
        to Redis (a command in flight as its clock jumps from ``BOOT`` would time out at once,
        a client's connect or command timeout being a timer).

        Its monotonic clocks follow only ``at_rest``, between requests. Inside one, time the
        schedule lets pass (a stall) moves its time of day alone: its client armed the timeout
        of the command held on its monotonic clock, and the schedule, not the network, held
        that command (``CLOCK_MONOTONIC`` catches up at the next request)."""
        now = self.clock()
        if self._shown == BOOT:
            quiet = lambda: not self.proxy.busy()  # noqa: E731
            wait_until_waiting(self.program.pid, TIMEOUT, self.program.alive, quiet)
        monotonic = now if at_rest else self._monotonic
        if (now, monotonic) != (self._shown, self._monotonic):
            self.clock_file.set_seconds(now, monotonic)
            self._shown, self._monotonic = now, monotonic

    def _next(self) -> Event:
        """Wait for the program's next point, or its answer with nothing held behind it; a
        program that waits for neither Redis nor its input (a timer, see ``_idle``) is Stuck."""
        deadline = time.monotonic() + TIMEOUT
        idle_since: float | None = None
        quiet = False  # whether the last wait ended with nothing new (then idleness is looked at)
        while True:
            self._woken.clear()
            held = self.proxy.held()
            if not held and self._answered is None:
                try:
                    answer = self.program.answer(0)
                except ProgramError as error:
                    return self._exited(error)
                if answer is not None:
                    self._answered = self._finished(answer)
            if not held and self._answered is not None:
                held = self.proxy.settle(TRAILING_GRACE)  # what it sent before answering
                if not held:
                    answered, self._answered = self._answered, None
                    return self._then_give_back(answered)
            if held:
                self._held = held[0]
                return Pending(self._held.command)
            now = time.monotonic()
            idle_since = (idle_since or now) if quiet and self._idle() else None
            if idle_since is not None and now - idle_since >= IDLE:
                self.gone = True
                raise Stuck(
                    f"{self.name} waits, with no command on its way to Redis and no answer "
                    f"(for {IDLE:g} s): for a timer, most likely. Its clocks follow the "
                    "schedule's time, which moves only between requests, so a timer due "
                    "inside a request (a retry's backoff, a delay) never fires"
                )
            if now >= deadline:
                self.gone = True
                raise Stuck(f"{self.name} ran {TIMEOUT:.0f} s without reaching Redis or answering")
            quiet = not self._woken.wait(min(deadline - now, IDLE / 10))

    def _finished(self, answer: Answer) -> Finished:
        """An answer as the explorer takes it; to a give-back, the admission it gave back, with
        an error unless the program said it gave it back."""
        if self._giving_back is None:
            return Finished(answer.decision, answer.error)
        decision, self._giving_back = self._giving_back, None
        if answer.line.strip() == GIVEN_BACK:
            return Finished(decision)
        return Finished(decision, f"answered {answer.line.strip()[:80]!r} to a give-back")

    def _then_give_back(self, answered: Finished) -> Event:
        """``answered``; or, for an admission to give back, ``Checked``, the give-back asked."""
        giving, self._giving = self._giving, None
        if giving is None or answered.decision is None or not answered.decision.allowed:
            return answered
        try:
            self.program.ask(given_back(*giving))
        except ProgramError as error:
            return self._exited(error)
        self._giving_back = answered.decision
        return Checked(answered.decision)

    def _idle(self) -> bool:
        """Whether the program waits with nothing of it on its way to Redis: its input has
        its request, so it waits for neither."""
        return not self.proxy.busy() and waiting(self.program.pid)

    def _exited(self, error: ProgramError) -> Event:
        """The program ended by itself: its request failed, unknown if a command of it reached
        Redis (the run counts it as the limiter's error, with the program's last words), and
        the program is started again for the next one. One killed because its clock could not
        be controlled ends the race (``ClockUncontrolled``)."""
        if self._tracer is not None and self._tracer.refused:
            raise ClockUncontrolled(
                f"{self.name}'s clock cannot be controlled: {self._tracer.refused}"
            )
        self.proxy.kill()
        self.program.kill()
        self._ended, self._answered = True, None
        return Finished(None, str(error))


Key = tuple[str, str, str, int]  # command, policy, Redis URL, instance number


class Pool:
    """The programs at rest between runs, by what they were started as, and the spares of each
    key whose program had to be started anew (see the module)."""

    def __init__(self) -> None:
        self._resting: dict[Key, ProcessInstance] = {}
        self._spares: dict[Key, deque[ProcessInstance]] = {}
        self._started: set[Key] = set()  # the keys a program was started for
        self._folder: Path | None = None

    def take(
        self, key: Key, name: str, clock: InstanceClock, log: Log, policy: Policy
    ) -> ProcessInstance:
        resting = self._resting.pop(key, None)
        if resting is not None:
            resting.join(clock, log)
            return resting
        if any(other[:3] != key[:3] for other in (*self._resting, *self._spares)):
            self.close()  # another program, policy or Redis now: those will not be asked again
        self._folder = self._folder or _in_memory()
        if key not in self._started:  # the first of its key: no spare yet, nor need of one
            self._started.add(key)
            return self._start(key, name, clock, log, policy)
        spares = self._spares.setdefault(key, deque())
        taken = spares.popleft() if spares else self._start(key, name, clock, log, policy)
        while len(spares) < SPARES:  # the next ones, booting while the runs go on
            spares.append(self._start(key, name, clock, _unlogged, policy))
        taken.join(clock, log)
        return taken

    def give_back(self, key: Key, instance: ProcessInstance) -> None:
        if instance.at_rest() and key not in self._resting:
            self._resting[key] = instance
        else:
            instance.stop()

    def resting(self) -> dict[int, int]:
        """Instance number -> process id, of the programs at rest now."""
        return {key[3]: each.program.pid for key, each in self._resting.items()}

    def spares(self) -> dict[int, list[int]]:
        """Instance number -> process ids, of the spares started and not taken, oldest first."""
        return {
            key[3]: [each.program.pid for each in spares] for key, spares in self._spares.items()
        }

    def upstream_addresses(self) -> set[str]:
        """The addresses of the connections to Redis the proxies of the programs held here
        (at rest, spare) made: theirs, not unseen clients'. A spare's proxy may be opening one
        as this reads (in its own thread): each set is copied whole, under the GIL."""
        held = [*self._resting.values(), *self._every_spare()]
        return {address for each in held for address in each.proxy.upstream_addresses.copy()}

    def keep_stderr(self, directory: Path) -> list[Path]:
        """Copy what the programs wrote to stderr so far (``app-N.stderr``) into ``directory``."""
        found = sorted(self._folder.glob("*.stderr")) if self._folder else []
        return [Path(shutil.copy(path, directory / path.name)) for path in found]

    def close(self) -> None:
        for instance in [*self._resting.values(), *self._every_spare()]:
            instance.stop()
        self._resting.clear()
        self._spares.clear()
        self._started.clear()
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None

    def _every_spare(self) -> list[ProcessInstance]:
        return [each for spares in self._spares.values() for each in spares]

    def _start(
        self, key: Key, name: str, clock: InstanceClock, log: Log, policy: Policy
    ) -> ProcessInstance:
        command, _, url, number = key
        assert self._folder is not None
        return ProcessInstance(
            name,
            number,
            clock,
            command=command,
            policy=policy,
            url=url,
            log=log,
            folder=self._folder,
        )


def _unlogged(instance: Any, command: tuple[Any, ...], reply: Any, sent: float) -> None:
    """The log of a program no run watches: a spare, a request drained after its run."""


def _in_memory() -> Path:
    """Where the programs' clock files and stderr go: in memory where there is /dev/shm."""
    shm = Path("/dev/shm")
    return Path(tempfile.mkdtemp(prefix="rlh-programs-", dir=shm if shm.is_dir() else None))


POOL = Pool()
atexit.register(POOL.close)
