"""One schedule, run: K instances of a limiter against one real Redis, the actions applied in
order, and what came of it: the history, the keys left behind, and a trace a person can read.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import redis

from ratelimit_harness.harness.checkers import Verdict, check
from ratelimit_harness.harness.decisions import decided
from ratelimit_harness.harness.errors import described
from ratelimit_harness.harness.explorer.clocks.real import OffClock
from ratelimit_harness.harness.explorer.clocks.virtual import InstanceClock, VirtualTime, patched
from ratelimit_harness.harness.explorer.instances.background import Background, adopting
from ratelimit_harness.harness.explorer.instances.process import POOL, ProcessInstance
from ratelimit_harness.harness.explorer.instances.thread import (
    Checked,
    Died,
    Event,
    Finished,
    Instance,
    Pending,
    ours,
)
from ratelimit_harness.harness.explorer.schedule.actions import Action, Advance, Step, Through
from ratelimit_harness.harness.explorer.schedule.faults import STRIKES
from ratelimit_harness.harness.explorer.server.keys import Expiry, ServerExpiry, text, touched
from ratelimit_harness.harness.explorer.server.keyspace import Keyspace
from ratelimit_harness.harness.explorer.wire import intercept, intercept_asyncio
from ratelimit_harness.harness.explorer.wire.connections import CONNECTIONS
from ratelimit_harness.harness.explorer.wire.unseen import Count, Unseen
from ratelimit_harness.harness.history import Operation, Outcome, races
from ratelimit_harness.harness.history.races import (
    COMMAND,
    CRASH,
    DECISION,
    FAILED,
    NEVER_SENT,
    NOBODY,
    REQUEST,
    SKEW,
    TIME,
    UNSCHEDULED,
)
from ratelimit_harness.harness.provision.virtual_time import ServerClock
from ratelimit_harness.limiters import Decision, Limiter, Policy, name_of, resolve
from ratelimit_harness.limiters.plugin import PluginLimiter
from ratelimit_harness.limiters.program import EXEC

RECOUNTS = 3  # counts of unseen commands at most, in one run (see Run._count_unseen)


@dataclass(frozen=True)
class Setup:
    limiter: str | Callable[..., Any]  # catalogue name, module:attribute, or a factory
    policy: Policy  # what the limiter is built with
    instances: int
    url: str
    judged_by: Policy | None = None  # what its history is judged by, if not ``policy``
    # whether each schedule starts on a flushed database (a Redis the harness started, or
    # --flush); if not, each run deletes the keys it made and no others (see keyspace)
    flush: bool = True
    # the clock file of a server on virtual time (see provision.virtual_time); empty: the
    # server keeps real time, and the explorer stretches TTLs instead (see keys.Expiry)
    clock_file: str = ""
    # whether to count the commands that reach the server by clients the explorer cannot see
    # (see unseen): only on a server the harness started
    count_unseen: bool = False
    # which admitted requests are given back (``refund``): instance n's request k gives back
    # when give_backs[(n + k) % len(give_backs)]
    give_backs: tuple[bool, ...] = (False,)

    @property
    def judge(self) -> Policy:
        return self.judged_by or self.policy


@dataclass
class RunResult:
    history: list[Operation]
    ttls: dict[str, float]
    trace: list[races.Step]
    actions: list[Action] = field(default_factory=list)
    # the checks that raised or answered what is not a decision, each "app-0 check(k): why"
    errors: list[str] = field(default_factory=list)
    decisions: int = 0  # the checks that answered a decision
    # why the run is void, not to be judged: real time reached it (the server expired a key)
    void: str = ""
    unscheduled: int = 0  # commands sent by threads the explorer does not schedule
    faults: frozenset[str] = frozenset()  # the nemesis' faults the run used (faults.FAULTS)
    # commands that reached the server by clients the explorer cannot see (None: not counted)
    unseen: Count | None = None
    # decisions whose now was off the schedule's time (see clocks.real); their now is dropped
    off_clock: OffClock = field(default_factory=OffClock)


@dataclass
class _Slot:
    """What the explorer knows of one instance between its steps."""

    instance: Instance | ProcessInstance
    identity: str = ""
    cost: int = 1
    invoked: float = 0.0
    invoked_clock: float = 0.0  # the instance's own clock (skewed) as its request began
    keys: list[str] = field(default_factory=list)
    pending: tuple[Any, ...] | None = None
    sent: bool = False  # whether the request has sent a command to Redis yet
    busy: bool = False
    dead: bool = False
    # each command the instance sent and what Redis answered, in order (see visited)
    heard: list[tuple[str, str]] = field(default_factory=list)
    started: int = 0  # requests begun in this run
    # an admitted request being given back: when it was decided, what, and when the give-back
    # began
    checked: tuple[float, Decision, float] | None = None


class Run:
    """Applies actions one at a time (so a strategy can choose each from what is enabled)."""

    def __init__(self, setup: Setup, admin: redis.Redis) -> None:
        self.setup, self.admin = setup, admin
        self.time = VirtualTime()
        self.expiry: Expiry | ServerExpiry = (
            ServerExpiry(ServerClock(setup.clock_file), admin, self.time.now)
            if setup.clock_file
            else Expiry(admin)
        )
        self.keyspace = Keyspace(admin, flush=setup.flush, real_time=self.expiry.real_time)
        self.unseen = Unseen(admin) if setup.count_unseen else None
        self.unscheduled = 0
        self.off_clock = OffClock()
        self.faults: set[str] = set()
        intercept.unscheduled_to(self._unscheduled, self._thread_ended)
        self.trace: list[races.Step] = []
        self.history: list[Operation] = []
        self.actions: list[Action] = []
        self.errors: list[str] = []
        self.decisions = 0
        self.clients: list[redis.Redis] = []
        self.background = Background(self._log, self._loose)
        self.slots = [_Slot(self._instance(n)) for n in range(setup.instances)]
        self._draining: list[ProcessInstance] = []  # cut off, let finish at the end (see _cut)
        self._named = {slot.instance.name: slot for slot in self.slots}

    def _instance(self, number: int) -> Instance | ProcessInstance:
        name, clock = f"app-{number}", InstanceClock(self.time)
        limiter, policy = self.setup.limiter, self.setup.policy
        if isinstance(limiter, str) and limiter.startswith(EXEC):
            return POOL.take(self._program_key(number), name, clock, self._log, policy)
        build = self._builder(resolve(limiter))
        return Instance(name, clock, build, self._log, self.background)

    def _program_key(self, number: int) -> tuple[str, str, str, int]:
        """What the program of instance ``number`` was started as (see instances.process)."""
        limiter = name_of(self.setup.limiter)
        return (limiter.removeprefix(EXEC), str(self.setup.policy), self.setup.url, number)

    def _builder(self, build: Callable[..., Limiter]) -> Callable[[Instance], Limiter]:
        def make(instance: Instance) -> Limiter:
            client = CONNECTIONS.client(self.setup.url)
            self.clients.append(client)
            # a catalogue script gets the run's time as its now, to the microsecond: the
            # instant a server on virtual time gives as TIME, and one a Redis that keeps real
            # time cannot give
            with self.background.owned_by(instance.name, instance.clock):
                return build(
                    client, self.setup.policy, clock=instance.clock, server_clock=self.time
                )

        return make

    def _log(self, instance: Any, command: tuple[Any, ...], reply: Any, sent: float) -> None:
        """In an instance's thread, right after Redis answered one of its commands."""
        with ours(), intercept.aside():
            keys = touched(command)
            self.expiry.after(keys, self.time.now, sent)
            slot = self._named.get(instance.name)  # an instance's, not one of its actors'
            if slot is not None:
                slot.heard.append((repr(command), repr(reply)))
            what, reply_text = _show(command), _show_reply(reply)
            self._note(instance.name, COMMAND, instance.clock(), what, reply_text, keys=keys)

    def _loose(self, actor: str, what: str) -> None:
        """A thread the limiter started blocks where nothing schedules it (see background)."""
        self._note(actor, UNSCHEDULED, self.time.now, what)

    def _thread_ended(self, thread: str, error: BaseException) -> None:
        """A thread the limiter started ended on an exception: noted, never the run's end."""
        what = "(unscheduled) thread ends"
        self._note(_lane(thread), UNSCHEDULED, self.time.now, what, described(error))

    def _unscheduled(self, thread: str, command: tuple[Any, ...], reply: Any) -> None:
        """A command of a thread the limiter started: it ran when it came, not when chosen."""
        self.unscheduled += 1
        what, keys = f"(unscheduled) {_show(command)}", tuple(touched(command))
        self._note(_lane(thread), UNSCHEDULED, self.time.now, what, _show_reply(reply), keys=keys)

    def enabled(self) -> Iterator[int]:
        """The instances that can take a step."""
        return (n for n, slot in enumerate(self.slots) if not slot.dead)

    def busy(self, instance: int) -> bool:
        """Whether the instance is inside a request (between two of its round trips)."""
        return self.slots[instance].busy

    def inside(self) -> bool:
        """Whether any instance is inside a request: time passing now stalls it."""
        return any(slot.busy and not slot.dead for slot in self.slots)

    def complete(self) -> None:
        """Let every instance inside a request finish it (a schedule without crashes)."""
        for n, slot in enumerate(self.slots):
            if slot.busy and not slot.dead:
                self.apply(Through(n, slot.identity))

    def apply(self, action: Action) -> None:
        self.background.settle()  # the limiter's own threads run, each until it is quiet
        self.actions.append(action)
        if isinstance(action, Step):
            self._step(action)
        elif isinstance(action, Through):
            self._step(Step(action.instance, action.identity, action.cost))
            while self.slots[action.instance].busy:
                self._step(Step(action.instance, action.identity, action.cost))
        elif isinstance(action, Advance):
            if self.inside():
                self.faults.add("stall")
            self.time.advance(action.seconds)
            self.expiry.advance(self.time.now)
            what = f"time passes {action.seconds:g} s"
            self._note(NOBODY, TIME, self.time.now, what, seconds=action.seconds)
        else:
            STRIKES[type(action)].apply(self, action)

    def crash(self, instance: int) -> None:
        """The instance dies: the command it was about to send never reaches Redis."""
        slot = self.slots[instance]
        self.faults.add("crash")
        self._note(slot.instance.name, CRASH, self.time.now, "crashes")
        if slot.busy:
            self._cut(slot)
        slot.dead = True

    def _cut(self, slot: _Slot) -> None:
        """The instance inside a request dies there: its next command never reaches Redis in
        this run. A program is only cut off where the next run flushes what it sends: what it
        holds stays held, and once the run has read the keys it is let finish its request
        (``ProcessInstance.drain``), then goes back to the pool, sparing a start (tens of
        milliseconds, more than a schedule). Redis sees no difference within the run: a command
        held is one never sent. Elsewhere it is killed, as a thread is stopped."""
        if isinstance(slot.instance, ProcessInstance) and self.setup.flush:
            self._draining.append(slot.instance)
            self._record(slot, Died())
        else:
            self._record(slot, slot.instance.crash())

    def jump(self, instance: int, seconds: float) -> None:
        """The instance's clock jumps by ``seconds`` (and stays off by that much)."""
        if seconds:
            self.faults.add("skew")
        clock = self.slots[instance].instance.clock
        clock.skew += seconds
        line = f"clock jumps {seconds:+g} s (now {clock.skew:+g} s off)"
        name = self.slots[instance].instance.name
        self._note(name, SKEW, clock(), line, seconds=seconds, offset=clock.skew)

    def _step(self, step: Step) -> None:
        slot = self.slots[step.instance]
        if slot.dead:
            return
        if slot.busy:
            slot.sent = True
            event = slot.instance.go()
        else:
            slot.busy, slot.identity, slot.cost, slot.keys, slot.sent = (
                True,
                step.identity,
                step.cost,
                [],
                False,
            )
            slot.invoked, slot.invoked_clock = self.time.now, slot.instance.clock()
            what = _called(slot)
            self._note(
                slot.instance.name, REQUEST, slot.invoked_clock, what, identity=step.identity
            )
            backs = self.setup.give_backs
            give_back = backs[(step.instance + slot.started) % len(backs)]
            slot.started += 1
            event = slot.instance.start(step.identity, step.cost, give_back)
        self._record(slot, event)

    def _record(self, slot: _Slot, event: Event) -> None:
        if isinstance(event, Pending):
            slot.pending = event.command
            slot.keys += touched(event.command)
            return
        if isinstance(event, Checked):  # admitted, and now given back: the request goes on
            decision = self._on_schedule(slot, event.decision)
            slot.checked = (self.time.now, decision, self.time.now)
            clock = slot.instance.clock()
            self._note(slot.instance.name, DECISION, clock, _called(slot), "allowed, given back")
            self._record(slot, slot.instance.more())
            return
        slot.busy, slot.pending = False, None
        if slot.checked is not None:
            answered = isinstance(event, Finished) and not event.error
            self._given_back(slot, answered, event)
            return
        keys = tuple(dict.fromkeys(slot.keys))
        name = slot.instance.name
        if isinstance(event, Died):
            self.history.append(
                Operation(
                    name, slot.identity, slot.invoked, None, Outcome.UNKNOWN, None, keys, slot.cost
                )
            )
            slot.dead = True
            return
        assert isinstance(event, Finished)
        if event.decision is None:
            # it failed: known not to have counted if nothing of it reached Redis, else it may
            # have (a write, then the exception)
            failed = Outcome.UNKNOWN if slot.sent else Outcome.ERROR
            what = f"{_called(slot)} failed"
            self._note(name, FAILED, self.time.now, what, event.error, identity=slot.identity)
            self.errors.append(f"{name} {_called(slot)}: {event.error}")
            self.history.append(
                Operation(
                    name, slot.identity, slot.invoked, self.time.now, failed, None, keys, slot.cost
                )
            )
        else:
            self.decisions += 1
            outcome = "allowed" if event.decision.allowed else "rejected"
            what, clock = _called(slot), slot.instance.clock()
            self._note(name, DECISION, clock, what, outcome, identity=slot.identity)
            decision = self._on_schedule(slot, event.decision)
            self.history.append(
                decided(
                    name,
                    slot.identity,
                    slot.invoked,
                    self.time.now,
                    decision,
                    keys=keys,
                    cost=slot.cost,
                )
            )

    def _given_back(self, slot: _Slot, answered: bool, event: Event) -> None:
        """The admitted request ``slot.checked`` as the history keeps it, with its give-back:
        answered now, or never (it died, or the give-back raised: it may have counted)."""
        assert slot.checked is not None
        decided_at, decision, began = slot.checked
        slot.checked = None
        name = slot.instance.name
        if isinstance(event, Died):
            slot.dead = True
        elif isinstance(event, Finished) and event.error:
            self._note(name, FAILED, self.time.now, f"{_called(slot)} gives back", event.error)
            self.errors.append(f"{name} {_called(slot)} gives back: {event.error}")
        self.decisions += 1
        keys = tuple(dict.fromkeys(slot.keys))
        op = decided(
            name, slot.identity, slot.invoked, decided_at, decision, keys=keys, cost=slot.cost
        )
        self.history.append(op._replace(refund=(began, self.time.now if answered else None)))

    def _on_schedule(self, slot: _Slot, decision: Decision) -> Decision:
        """The decision, its ``now`` dropped if it is off the schedule's time (see
        real_clock): only checked on a server on virtual time, where the server's clock (and a
        limiter that reads it) follows the schedule too."""
        if decision.now is None or not self.setup.clock_file:
            return decision
        times = (slot.invoked, slot.invoked_clock, self.time.now, slot.instance.clock())
        who = f"{slot.instance.name} {_called(slot)}"
        if self.off_clock.check(who, decision.now, min(times), max(times)):
            return decision
        return replace(decision, now=None)

    def _note(
        self, lane: str, kind: str, clock: float, what: str, reply: str = "", **more: Any
    ) -> None:
        """One step of the trace, at the run's virtual time now."""
        self.trace.append(races.Step(lane, kind, clock, self.time.now, what, reply, **more))

    def finish(self) -> RunResult:
        """End the run: instances still waiting to send never do (their requests stay
        unknown); stop the threads; snapshot the keys. A program with a request inside is let
        finish it once the keys are read, where the next run flushes what it sends (see
        process_instance); elsewhere it is killed, as a thread is stopped."""
        self._end_background()
        for slot in self.slots:
            if slot.busy:
                never = _show(slot.pending) if slot.pending else "its next command"
                line = f"schedule ends: never sends {never}"
                self._note(slot.instance.name, NEVER_SENT, slot.instance.clock(), line)
                if slot.sent:  # it has begun to change Redis and never comes back: a crash
                    self.faults.add("crash")
                self._cut(slot)
        in_threads = [slot.instance for slot in self.slots if isinstance(slot.instance, Instance)]
        for in_thread in in_threads:
            in_thread.stop()
        for client in self.clients:  # what they connected, the next run uses (see connections)
            CONNECTIONS.keep(client, self.setup.url)
        for in_thread in in_threads:
            _close(in_thread)
        for client in self.clients:
            intercept.retire(client)
        intercept.unscheduled_to(None, None)  # what the limiter's threads do now is not this run's
        ttls = self.keyspace.ours(self.expiry.snapshot(self.time.now))
        expired = self.keyspace.close(ttls)  # by real time: counted only where time is real
        void = f"the server expired {expired} key(s) by real time" if expired else ""
        unseen = self._count_unseen()
        for instance in self._draining:
            instance.drain()
        for number, slot in enumerate(self.slots):
            if isinstance(slot.instance, ProcessInstance):
                POOL.give_back(self._program_key(number), slot.instance)
        return RunResult(
            self.history,
            ttls,
            self.trace,
            self.actions,
            self.errors,
            self.decisions,
            void,
            self.unscheduled,
            frozenset(self.faults),
            unseen,
            self.off_clock,
        )

    def _end_background(self) -> None:
        """The limiter's own threads run until quiet, for the last time; what they were about
        to send they never do (see background)."""
        self.background.settle()
        for actor in self.background.actors:
            if actor.pending is not None:
                line = f"schedule ends: never sends {_show(actor.pending)}"
                self._note(actor.name, NEVER_SENT, actor.clock(), line)
        self.background.close()

    def _count_unseen(self) -> Count | None:
        """What reached the server by clients the explorer cannot see: not the wire's, nor any
        program's proxy's, the pool's spares' included. A spare boots in the background and may
        connect while this counts; its proxy knows a connection's address before anything is
        sent on it, so a count that found any is made again with the addresses read anew, until
        none are new (``RECOUNTS`` counts at most)."""
        if self.unseen is None:
            return None
        count: Count | None = None
        seen: set[str] = set()
        for _ in range(RECOUNTS):
            addresses = self._program_addresses()
            if count is not None and (not count.commands or addresses <= seen):
                break
            seen = addresses
            count = self.unseen.count(seen)
        return count

    def _program_addresses(self) -> set[str]:
        """The connections to Redis of every program's proxy, this run's and the pool's."""
        programs = [s.instance for s in self.slots if isinstance(s.instance, ProcessInstance)]
        found = {address for each in programs for address in each.proxy.upstream_addresses.copy()}
        return found | POOL.upstream_addresses()


def _close(instance: Instance | ProcessInstance) -> None:
    """What the limiter of a stopped instance holds open: its client, its event loop (and the
    asyncio connections made on it)."""
    limiter = instance.limiter
    client = getattr(limiter, "client", None)
    if client is not None:
        client.close()
    if isinstance(limiter, PluginLimiter) and not instance.gone:
        limiter.close(last=intercept_asyncio.disconnect_on)


@contextlib.contextmanager
def scheduled() -> Iterator[None]:
    """What runs need around them: virtual clocks in the instances' threads, and every
    command a limiter sends caught at its connection."""
    with patched(), intercept.intercepted(*intercept_asyncio.tables()), adopting():
        try:
            yield
        finally:
            CONNECTIONS.close()


def run_schedule(setup: Setup, actions: Iterable[Action]) -> tuple[RunResult, Verdict]:
    """Run a fixed schedule under virtual clocks, and judge its history."""
    admin = redis.Redis.from_url(setup.url)
    try:
        with scheduled():
            return run_actions(setup, admin, actions)
    finally:
        admin.close()


def run_actions(
    setup: Setup, admin: redis.Redis, actions: Iterable[Action]
) -> tuple[RunResult, Verdict]:
    """``run_schedule`` for a caller that runs many, already under ``scheduled()``."""
    run = Run(setup, admin)
    try:
        for action in actions:
            run.apply(action)
    finally:
        result = run.finish()
    return result, check(result.history, setup.judge, result.ttls)


def _lane(thread: str) -> str:
    """A thread's name as one word, so a trace line still reads as its columns."""
    return "-".join(thread.split()) or "thread"


def _show(command: tuple[Any, ...]) -> str:
    parts = [_text(part) for part in command]
    if parts and parts[0].upper() == "EVALSHA":
        parts[1] = parts[1][:8]  # the script's sha, shortened
    return " ".join(parts)


def _show_reply(reply: Any) -> str:
    if isinstance(reply, list | tuple):
        return "[" + ", ".join(_show_reply(r) for r in reply) + "]"
    return _text(reply)


def _text(value: Any) -> str:
    return "nil" if value is None else text(value)


def _called(slot: _Slot) -> str:
    """The call the slot's request makes, as a trace shows it: ``check(user:1)``, or
    ``check(user:1, 3)`` for a request that costs 3."""
    cost = f", {slot.cost}" if slot.cost != 1 else ""
    return f"check({slot.identity}{cost})"
