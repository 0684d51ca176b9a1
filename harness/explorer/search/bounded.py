"""The bounded stage: every schedule within a stated bound, before any random draw.

A *bound* says how many instances, how many requests each, and how many of three things a
schedule may hold: switches, faults and time moves. By default the instances take turns: one
runs a whole request, then the next. A *switch* leaves that order: another instance goes on
while the last one is inside a request (a preemption: it has sent a command and has more to
send), or takes the turn of another between requests. A *fault* is a crash (the instance dies,
its next command never sent), a stall (time moves while an instance is inside a request) or a
skew (between requests, one instance's clock jumps just past the next window edge it reads, or
back to just before the start of its current window). A *time move* is time passing while every
instance is between requests. Time only ever moves to an instant that matters: just before, at
and just after the next window edge, a key's deadline (its PTTL on the explorer's server) or a
bucket's refill, and far past all of them.

Schedules are run in order of *cost*, the switches, faults and time moves they hold, so the
first find is one of the shortest (the research on systematic testing finds most races within
one or two preemptions: CHESS's iterative context bounding). Each run starts from a branch, a
schedule cut short, and goes on by the choice that costs nothing (the same instance, or the
next one at a request's end); every other choice it passes is a branch queued by its cost. So
each schedule within the bound runs exactly once.

Two choices that *commute* lead to the same outcome in either order: round trips of two
instances whose commands touch disjoint keys, or only read the same ones. Sleep sets skip the
second order (Godefroid's partial-order reduction): after one choice is explored, a sibling
that commutes with it does not take it again. The stage counts the branches it skipped so. It
knows a command only once it waits to be sent, so a request not begun commutes with nothing:
the reduction works between instances both inside requests, and little elsewhere.

A schedule also stops where every instance is between requests in a state the stage reached
before, at no greater cost: what can follow was run from there (``visited``).

The stage ends when its bound is exhausted or its budget of schedules is spent, and says which
(``Coverage``).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ratelimit_harness.harness.explorer.schedule.actions import (
    Action,
    Advance,
    Crash,
    Skew,
    Step,
    Through,
)
from ratelimit_harness.harness.explorer.schedule.run import Run, RunResult
from ratelimit_harness.harness.explorer.search.drawing import HAIR, Space
from ratelimit_harness.harness.explorer.search.visited import Place, Visited
from ratelimit_harness.harness.explorer.server.keys import touched
from ratelimit_harness.limiters import Policy

# commands that change nothing: two of them on the same key commute
READS = frozenset(
    {
        *("GET", "MGET", "EXISTS", "TTL", "PTTL", "TYPE", "STRLEN", "HGET", "HMGET", "HGETALL"),
        *("HEXISTS", "LLEN", "LRANGE", "ZCARD", "ZCOUNT", "ZRANGE", "ZRANGEBYSCORE", "ZSCORE"),
        *("SCARD", "SMEMBERS", "SISMEMBER", "TIME", "PING"),
    }
)
START = "start"  # a request begun: its code runs up to its first command, sent next


@dataclass(frozen=True)
class Bound:
    """What the stage covers: ``instances`` instances, each making up to ``requests`` requests
    (instance ``n`` asks for ``identities[n % len(identities)]``), with at most ``switches``
    switches, ``faults`` crashes, stalls and skews, and ``time_moves`` time moves. ``crash``,
    ``stall`` and ``skew`` say which faults the nemesis allows. ``warm``: whole requests that
    instance 0 makes alone first, each start tried (a fresh key, and one a request short of its
    budget)."""

    instances: int = 2
    requests: int = 2
    identities: tuple[str, ...] = ("user:1",)
    switches: int = 2
    faults: int = 1
    time_moves: int = 1
    costs: tuple[int, ...] = (1,)  # instance n's request k costs costs[(n + k) % len(costs)]
    give_backs: tuple[bool, ...] = (False,)  # and is given back so (Setup.give_backs)
    crash: bool = True
    stall: bool = True
    skew: bool = False
    warm: tuple[int, ...] = (0,)

    def describe(self) -> str:
        """The bound in words, for a verdict."""
        keys = "one identity" if len(self.identities) == 1 else f"{len(self.identities)} identities"
        kinds = [
            ("crash", "crashes", self.crash),
            ("stall", "stalls", self.stall),
            ("skew", "skews", self.skew),
        ]
        allowed = [(one, more)[self.faults > 1] for one, more, on in kinds if on]
        faults = " or ".join([", ".join(allowed[:-1]), allowed[-1]] if allowed[:-1] else allowed)
        moves = _count(self.time_moves, "time move", "time moves")
        parts = [
            f"{self.instances} instances x {self.requests} requests on {keys}",
            f"at most {_count(self.switches, 'switch', 'switches')}",
            *([f"{self.faults} {faults}"] if faults and self.faults else []),
            f"{moves} to window edges and key deadlines",
        ]
        if len(self.costs) > 1:
            parts.append(f"requests costing {', '.join(map(str, self.costs))} in turn")
        if any(self.give_backs):
            parts.append("admitted requests given back in turn")
        if len(self.warm) > 1:
            parts.append("from a fresh key and one a request short of its budget")
        return ", ".join(parts)


def _count(n: int, one: str, more: str) -> str:
    return f"{n} {one if n == 1 else more}"


def bound_for(
    policy: Policy,
    instances: int,
    nemeses: Sequence[str],
    costs: tuple[int, ...] = (1,),
    give_backs: tuple[bool, ...] = (False,),
) -> Bound:
    """The default bound: two instances (or as many as asked, up to three), requests enough
    for one to spend the policy's budget (a composite's smallest) inside a preemption of
    another (up to three), two switches, one fault, one time move; requests cost ``costs``
    in turn."""
    budget = min(int(limit.limit or limit.capacity or 1) for limit in policy.limits or (policy,))
    warm = tuple(sorted({0, max(budget - 1, 0)}))
    return Bound(
        instances=min(instances, 3),
        requests=min(budget + 1, 3),
        costs=costs,
        give_backs=give_backs,
        crash="crash" in nemeses,
        stall="stall" in nemeses,
        skew="skew" in nemeses,
        warm=warm,
    )


@dataclass
class Coverage:
    """What the stage explored, for the verdict."""

    bound: Bound
    schedules: int = 0  # run to their end and judged
    skipped: int = 0  # branches not taken: they commute with one taken (sleep sets)
    merged: int = 0  # schedules stopped in a state reached before (see visited)
    complete: bool = False  # every schedule within the bound was run
    cost_done: int = -1  # every schedule of at most this cost was run
    cost_most: int = 0  # the highest cost a schedule within the bound may have
    found: bool = False  # the stage ended at a find

    def describe(self) -> str:
        """One sentence: what was proved, or how far the stage got."""
        runs = (
            f"{self.schedules:,} schedules, {self.skipped:,} equivalent ones skipped, "
            f"{self.merged:,} stopped at a state reached before"
        )
        if self.complete:
            return f"every schedule of {self.bound.describe()} ({runs})"
        if self.cost_done < 0:
            return f"{self.bound.describe()}: part of the cheapest schedules ({runs})"
        return (
            f"{self.bound.describe()}: every schedule with at most {self.cost_done} of these in "
            f"all (of up to {self.cost_most}), then part of the next ({runs})"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "bound": self.bound.describe(),
            "schedules": self.schedules,
            "skipped": self.skipped,
            "merged": self.merged,
            "complete": self.complete,
            "cost_done": self.cost_done,
            "cost_most": self.cost_most,
            "described": self.describe(),
        }


@dataclass(frozen=True)
class _Tally:
    """What a schedule holds so far, against its bound."""

    switches: int = 0
    faults: int = 0
    time_moves: int = 0
    started: tuple[int, ...] = ()  # requests each instance has begun
    last: int = -1  # the instance that stepped last
    # a fault struck and nothing has settled since: where every instance is next between
    # requests, the schedule may end (later requests can mend what a fault left, as the next
    # EXPIRE of a pipeline mends a key a crash left without one)
    unsettled: bool = False
    ended: bool = False

    @property
    def cost(self) -> int:
        return self.switches + self.faults + self.time_moves


Sent = tuple[Any, ...] | str | None  # a command, START, or None (time, a crash)


@dataclass(frozen=True)
class _Choice:
    """One way on from a point: its actions and the tally after them; for a step of an
    instance, which one and what it sends (a command, or ``START``)."""

    actions: tuple[Action, ...]
    tally: _Tally
    instance: int = -1  # -1: time moving, or a crash
    sends: Sent = None

    @property
    def key(self) -> tuple[Any, ...]:
        """What names the choice at a later point, once others commuted past it."""
        return (self.instance, self.sends) if self.instance >= 0 else self.actions


@dataclass(order=True)
class _Branch:
    cost: int
    length: int  # of the same cost, the one that leaves the free schedule soonest goes first
    serial: int
    actions: tuple[Action, ...] = field(compare=False)
    tally: _Tally = field(compare=False)
    sleep: frozenset[tuple[Any, ...]] = field(compare=False, default=frozenset())


@dataclass
class _Search:
    """The branches not run yet, in two queues: schedules where time never moves (interleavings
    and crashes), and schedules where it does (stalls, skews and time moves). Each has its own order
    of cost, and they take turns: a time move has several instants to go to at each point, so
    one queue would put every interleaving with two preemptions behind every single stall."""

    policy: Policy
    bound: Bound
    coverage: Coverage
    untimed: list[_Branch] = field(default_factory=list)
    timed: list[_Branch] = field(default_factory=list)
    serial: Iterator[int] = field(default_factory=itertools.count)
    turn: int = 0
    visited: Visited = field(init=False)

    def __post_init__(self) -> None:
        self.visited = Visited(symmetric=len(self.bound.identities) == 1)

    def queue(self, actions: tuple[Action, ...], tally: _Tally, sleep: frozenset[Any]) -> None:
        branch = _Branch(tally.cost, len(actions), next(self.serial), actions, tally, sleep)
        timed = any(isinstance(action, Advance | Skew) for action in actions)
        heapq.heappush(self.timed if timed else self.untimed, branch)

    def pop(self) -> _Branch | None:
        """The next branch to run, from each queue in turn; None when both are empty."""
        first, second = (
            (self.untimed, self.timed) if self.turn % 2 == 0 else (self.timed, self.untimed)
        )
        self.turn += 1
        queue = first or second
        return heapq.heappop(queue) if queue else None

    @property
    def cost_done(self) -> int:
        """Every branch of at most this cost has run, in both queues."""
        least = [q[0].cost for q in (self.untimed, self.timed) if q]
        return (
            min(least) - 1
            if least
            else self.bound.switches + self.bound.faults + self.bound.time_moves
        )

    def _reached_before(self, run: Run, tally: _Tally) -> bool:
        """Whether the run is in a state reached before at no greater cost (see visited)."""
        if run.inside():
            return False
        place = Place(tally.started, tally.last, tally.unsettled)
        return self.visited.again(run, place, (tally.switches, tally.faults, tally.time_moves))

    def go_on(self, run: Run, branch: _Branch) -> None:
        """Take the free choice at every point to the schedule's end, queueing the others."""
        tally, sleep = branch.tally, branch.sleep
        while True:
            if not sleep and not tally.ended and self._reached_before(run, tally):
                self.coverage.merged += 1
                return
            every = _choices(run, self.policy, self.bound, tally)
            choices = [c for c in every if c.key not in sleep]
            self.coverage.skipped += len(every) - len(choices)
            if not choices:
                return
            taken, *others = choices
            done = [taken]
            for other in others:
                # what went first here and commutes with it need not go again after it
                asleep = {c.key for c in done if _commute(c, other)}
                asleep |= {key for key in sleep if _commutes(key, other)}
                self.queue((*run.actions, *other.actions), other.tally, frozenset(asleep))
                done.append(other)
            sleep = frozenset(key for key in sleep if _commutes(key, taken))
            for action in taken.actions:
                run.apply(action)
            tally = taken.tally


class Schedules:
    """The schedules within ``bound``, cheapest first, each run once. Several searches may read
    it from the start, each judging by its own aim (a search for each kind of flaw, say): what
    one ran, the next reads again without running it."""

    def __init__(self, policy: Policy, bound: Bound, after: Sequence[Action] | None = None) -> None:
        """``after``: a schedule to go on from (a find, whose consequences are sought), in
        place of the warm starts; the bound counts what follows it."""
        self.bound = bound
        self._search = _Search(policy, bound, Coverage(bound))
        # each outcome, and the cost done, branches skipped and states merged so far
        self._ran: list[tuple[RunResult, int, int, int]] = []
        start = _Tally(started=(0,) * bound.instances)
        warm = (tuple(Through(0, bound.identities[0]) for _ in range(n)) for n in bound.warm)
        for opening in [tuple(after)] if after is not None else warm:
            self._search.queue(opening, start, frozenset())

    def read(
        self, run_from: Callable[[], Run], judge: Callable[[RunResult], bool], budget: int
    ) -> Coverage:
        """Judge the schedules in order until ``judge`` says one is a find, the bound is
        exhausted, or ``budget`` have been judged. ``run_from()`` is a fresh run."""
        most = self.bound.switches + self.bound.faults + self.bound.time_moves
        coverage = Coverage(self.bound, cost_most=most)
        while coverage.schedules < budget:
            if coverage.schedules == len(self._ran) and not self._run_next(run_from):
                coverage.complete, coverage.cost_done = True, most
                return coverage
            outcome, coverage.cost_done, coverage.skipped, coverage.merged = self._ran[
                coverage.schedules
            ]
            coverage.schedules += 1
            if judge(outcome):
                coverage.found = True
                return coverage
        return coverage

    def _run_next(self, run_from: Callable[[], Run]) -> bool:
        """Run the next schedule (see ``_Search``); False when none is left."""
        state = self._search
        branch = state.pop()
        if branch is None:
            return False
        run = run_from()
        try:
            for action in branch.actions:
                run.apply(action)
            state.go_on(run, branch)
        finally:
            outcome = run.finish()
        if outcome.unseen is not None and outcome.unseen.commands:
            state.visited.off = True  # what a client it cannot see heard is not known
        done = state.coverage
        self._ran.append((outcome, state.cost_done, done.skipped, done.merged))
        return True


def search(
    run_from: Callable[[], Run],
    policy: Policy,
    bound: Bound,
    judge: Callable[[RunResult], bool],
    budget: int,
) -> Coverage:
    """Run the schedules within ``bound``, cheapest first, until ``judge`` says one is a find,
    the bound is exhausted, or ``budget`` schedules have run."""
    return Schedules(policy, bound).read(run_from, judge, budget)


def _choices(run: Run, policy: Policy, bound: Bound, tally: _Tally) -> list[_Choice]:
    """Every way on from this point within the bound, the free one first."""
    if tally.ended:
        return []
    alive = [n for n in range(bound.instances) if not run.slots[n].dead]
    busy = [n for n in alive if run.busy(n)]
    if tally.unsettled and not busy:
        settled = replace(tally, unsettled=False)
        end = _Choice((), replace(settled, ended=True))
        return [end, *_choices(run, policy, bound, settled)]
    fresh = [n for n in alive if not run.busy(n) and tally.started[n] < bound.requests]
    last = tally.last
    if last in busy and not run.slots[last].sent:
        # a request just begun sends its first command now: another instance going first only
        # starts it later; but time may pass between its start and that command (a stall)
        go = _go(run, bound, tally, last)
        if not bound.stall or tally.faults >= bound.faults:
            return [go]
        stalled = replace(tally, faults=tally.faults + 1, unsettled=True)
        return [go, *(_Choice((Advance(s),), stalled) for s in instants(run, policy))]
    inside = last in busy and run.slots[last].sent
    goes: list[_Choice] = []
    for n in _in_turn(busy, fresh, last, bound.instances):
        go = _go(run, bound, tally, n)
        # a switch: another instance steps while the last is inside a request (a preemption),
        # or takes the turn of the one whose turn it is between requests; where two steps
        # commute, sleep sets keep one order of the two
        if goes and (inside or n != goes[0].instance):
            if tally.switches >= bound.switches:
                continue
            go = replace(go, tally=replace(go.tally, switches=tally.switches + 1))
        goes.append(go)
    timed: list[_Choice] = []
    sent = [n for n in busy if run.slots[n].sent]
    if sent and tally.faults < bound.faults:
        faulted = replace(tally, faults=tally.faults + 1, unsettled=True)
        timed += [_Choice((Crash(n),), faulted) for n in sent if bound.crash]
        timed += [_Choice((Advance(s),), faulted) for s in instants(run, policy) if bound.stall]
    elif not busy and goes and any(tally.started) and tally.time_moves < bound.time_moves:
        # (time moving before the first request only moves every instant of the schedule)
        moved = replace(tally, time_moves=tally.time_moves + 1)
        timed += [_Choice((Advance(s),), moved) for s in instants(run, policy)]
    if not busy and goes and bound.skew and tally.faults < bound.faults:
        skewed = replace(tally, faults=tally.faults + 1)
        for n in alive:
            jumps = skews(policy, run.slots[n].instance.clock())
            timed += [_Choice((Skew(n, s),), skewed) for s in jumps]
    return goes + timed


def _in_turn(busy: list[int], fresh: list[int], last: int, instances: int) -> list[int]:
    """The instances that may step, the one whose turn it is first: the last, while it is
    inside a request; else one inside a request it was preempted in; else the next after the
    last, round the instances in order."""
    if last in busy:
        first = [last]
    elif busy:
        first = busy[:1]
    else:
        first = sorted(fresh, key=lambda n: (n - last - 1) % instances)[:1]
    return first + sorted(set(busy + fresh) - set(first))


def _go(run: Run, bound: Bound, tally: _Tally, n: int) -> _Choice:
    """Instance ``n``'s next step: its pending command sent (a round trip), or a request begun
    (its code runs up to its first command, which waits)."""
    slot = run.slots[n]
    cost = bound.costs[(n + tally.started[n]) % len(bound.costs)]
    step = (Step(n, bound.identities[n % len(bound.identities)], cost),)
    if slot.busy:
        return _Choice(step, replace(tally, last=n), n, slot.pending)
    started = tuple(c + (i == n) for i, c in enumerate(tally.started))
    return _Choice(step, replace(tally, started=started, last=n), n, START)


def instants(run: Run, policy: Policy) -> list[float]:
    """How far time may move from now, to the millisecond: a hair either side of the next
    window edge, each key's deadline and a bucket's refill; and far past all of them."""
    now = run.time.now
    marks = [Space.edge(policy, now)]
    marks += [1 / limit.rate for limit in policy.limits or (policy,) if limit.rate]  # a token back
    marks += [ttl for ttl in run.keyspace.ours(run.expiry.snapshot(now)).values() if ttl > 0]
    near = {round(mark + hair, 3) for mark in marks for hair in (-HAIR, 0.0, HAIR)}
    return sorted(s for s in near | {round(3 * Space.period(policy), 3)} if s > 0)


def skews(policy: Policy, reads: float) -> list[float]:
    """How far an instance's clock, reading ``reads``, may jump: a hair past the next window
    edge it reads, or back a hair before the start of its window (a limiter that keys windows by
    its own clock then counts in another window than the others)."""
    ahead = Space.edge(policy, reads)
    back = Space.period(policy) - ahead
    return [round(ahead + HAIR, 3), round(-(back + HAIR), 3)]


def _commute(a: _Choice, b: _Choice) -> bool:
    """Whether steps of two instances lead to the same state in either order."""
    if a.instance < 0 or b.instance < 0 or a.instance == b.instance:
        return False
    return _independent(a.sends, b.sends)


def _commutes(key: tuple[Any, ...], choice: _Choice) -> bool:
    """``_commute`` for a choice asleep, known by its key only."""
    if len(key) != 2 or not isinstance(key[0], int):
        return False
    return _commute(_Choice((), _Tally(), key[0], key[1]), choice)


def _independent(a: Sent, b: Sent) -> bool:
    """Two commands commute where their keys are apart, or where both only read. A request
    begun is taken with its first command, not known yet: it commutes with nothing."""
    if not isinstance(a, tuple) or not isinstance(b, tuple):
        return False
    keys_a, keys_b = set(touched(a)), set(touched(b))
    if not keys_a or not keys_b:  # a script that names no key may touch any
        return False
    return keys_a.isdisjoint(keys_b) or (_name(a) in READS and _name(b) in READS)


def _name(command: tuple[Any, ...]) -> str:
    head = command[0] if command else b""
    return (head.decode() if isinstance(head, bytes) else str(head)).upper()
