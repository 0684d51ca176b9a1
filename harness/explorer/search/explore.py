"""Search schedules until one breaks the policy, then shrink it.

Two stages, the second only if the first found nothing. The bounded stage (``bounded``) runs
every schedule within a stated bound, cheapest first, and says what it covered. Then Hypothesis
draws interleavings, time passing, crashes and clock skews at random. Every schedule runs
against a real Redis (on a clean database) and its history goes through the verdict engine.
``wanted`` says which verdicts count as a find (any violation, or one kind). A find counts once
it shows again on re-runs (``CONFIRM``); a run that real time reached (the server expired a key
itself) is void, not judged. The searches of one setup, one for each kind of flaw, read the
bounded stage's schedules from one stream (``_stream``): none is run twice. Searches that would
draw the same random schedules (the same setup, faults, seed and budget: what one flaw needs,
then what another needs) share them too: once the first drew them all, the next judges their
outcomes again (``_DRAWN``).

A find of either stage is shrunk by ``minimize``, on the actions themselves; Hypothesis' own
shrinking phase is off. Measured on the catalogue's time-dependent flaws: with it, finding and
shrinking took 2-15 s and left traces of up to 13 lines; without it, 0.3-2.2 s, and the traces
are as short or shorter.
"""

from __future__ import annotations

import threading
import time
import zlib
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Generic, TypeVar

import redis
from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import seed as fixed_seed
from hypothesis import strategies as st
from hypothesis.errors import Flaky, HypothesisException

from ratelimit_harness.harness.checkers import Verdict, check
from ratelimit_harness.harness.errors import described
from ratelimit_harness.harness.explorer.clocks.real import OffClock
from ratelimit_harness.harness.explorer.schedule.actions import Action
from ratelimit_harness.harness.explorer.schedule.faults import FAULTS, ClockSpread, labels
from ratelimit_harness.harness.explorer.schedule.run import (
    Run,
    RunResult,
    Setup,
    run_actions,
    scheduled,
)
from ratelimit_harness.harness.explorer.search import bounded
from ratelimit_harness.harness.explorer.search.drawing import (
    Space,
    draw_actions,
    draw_opening,
    draw_swarm,
)
from ratelimit_harness.harness.explorer.search.minimize import minimize
from ratelimit_harness.limiters import name_of

# A find is re-run this many times before it counts: each must show it again. The schedule is
# data and every clock virtual, so a true find always does; one that does not came from
# something outside the schedule (a thread descheduled while Redis counted a TTL down in real
# time, say) and is reported as unconfirmed, not shrunk, and the search goes on.
CONFIRM = 3
# A fault is needed when no search without it shows the flaw (see explore). Each such search
# judges max_examples // NEED_DIVISOR schedules, at most NEED_MOST, in each stage (bounded,
# then random). Most flaws with no fault that the bounded stage misses are drawn within 50.
NEED_DIVISOR = 3  # so a search for what a flaw needs gets a third of max_examples
NEED_MOST = 60
UNCONFIRMED_KEPT = 3  # unconfirmed finds kept for the report (the rest are only counted)
# the most schedules the bounded stage judges for one search (one for a flaw hard to reach may
# draw more at random: race-test's FLAW_BUDGET)
BOUNDED_MOST = 400
# the most it judges on from an earlier find (see explore_every_kind): a flaw's consequence
# is a few steps on (exists_then_incrby's wrongful rejection: 23)
AFTER_MOST = 60


@dataclass
class Exploration:
    setup: Setup
    examples: int = 0  # schedules judged in all, the bounded stage's included
    coverage: bounded.Coverage | None = None  # what the bounded stage explored
    shrink_runs: int = 0  # schedules run while shrinking the find
    examples_to_find: int = 0  # schedules run until the first find
    seconds_to_find: float = 0.0
    seconds: float = 0.0
    found: RunResult | None = None  # the shortest failing run, after shrinking
    verdict: Verdict | None = None
    first_steps: int = 0  # actions in the first failing schedule, before shrinking
    stage: str = ""  # which stage found it: bounded or search
    decisions: int = 0  # checks that answered a decision, over every schedule run
    errors: int = 0  # checks that raised or answered what is not a decision
    first_error: str = ""  # the first of those, in one line
    void: int = 0  # schedules not judged: real time reached them (see RunResult.void)
    unconfirmed_count: int = 0  # finds that did not show again when re-run
    unconfirmed: list[tuple[RunResult, Verdict]] = field(default_factory=list)  # the first few
    search_ended: str = ""  # why Hypothesis ended the search early, if it did
    seed: int | None = None  # the random stage's, once it ran (see derived_seed)
    after_runs: int = 0  # schedules run on from an earlier find (see explore_every_kind)
    need_runs: int = 0  # schedules run to find what the flaw needs (see explore)
    # commands that reached the server by clients the explorer cannot see, over every schedule
    # run (counted only where ``setup.count_unseen``; see unseen), and the first few of them
    unseen: int = 0
    first_unseen: list[str] = field(default_factory=list)
    # decisions whose now was off the schedule's time, over every schedule run (see clocks.real)
    off_clock: OffClock = field(default_factory=OffClock)

    @property
    def kinds(self) -> set[str]:
        """The kinds of violation the shortest failing run shows."""
        return self.verdict.kinds if self.verdict else set()

    @property
    def bounded_runs(self) -> int:
        """Schedules of the bounded stage, of ``examples``."""
        return self.coverage.schedules if self.coverage else 0

    @property
    def covered(self) -> str:
        """What the search explored, in words: the bound it proved (or how far it got), then
        what it only sampled."""
        drawn = self.examples - self.bounded_runs - self.after_runs - self.need_runs
        parts = [self.coverage.describe()] if self.coverage else []
        if self.after_runs:
            parts.append(f"{self.after_runs} schedules on from the last find")
        if drawn or not self.need_runs:
            parts.append(f"then {drawn} random schedules" + (f" (seed {self.seed})" * bool(drawn)))
        if self.need_runs:
            parts.append(f"then {self.need_runs} to find what the flaw needs")
        return "; ".join(parts)

    @property
    def trace_steps(self) -> int:
        return len(self.found.trace) if self.found else 0

    @property
    def faults(self) -> frozenset[str]:
        """The nemesis' faults the shortest failing run needs (none: interleaving and time)."""
        return self.found.faults if self.found else frozenset()

    @property
    def fault_labels(self) -> list[str]:
        """The faults needed, as a report shows them: "none", or each with how much of it."""
        shown = labels(sorted(self.faults))
        if "skew" in self.faults:
            shown = [f"skew {self.clocks_apart:g} s" if s == "clock skew" else s for s in shown]
        return shown

    @property
    def clocks_apart(self) -> float:
        """At most how far apart the instances' clocks were in the shortest failing run."""
        if self.found is None:
            return 0.0
        return ClockSpread.of(self.found.actions, self.setup.instances).seconds


class _Stop(BaseException):
    """Ends Hypothesis' search at once: on a find, or on an error (``error``) that ends the run.
    Not an Exception, so it passes through Hypothesis as KeyboardInterrupt does; an Exception
    would count as the test failing, and Hypothesis would run that schedule again (and raise
    FlakyFailure, not our error, if the second run went otherwise)."""

    def __init__(self, error: Exception | None = None) -> None:
        super().__init__()
        self.error = error


@dataclass
class _Judge:
    """Judges each schedule's outcome and keeps the tally."""

    result: Exploration
    wanted: Callable[[Verdict], bool]
    on_example: Callable[[Exploration], None]
    started: float
    admin: redis.Redis
    allowed: frozenset[str]  # the faults a find may use

    def fails(self, outcome: RunResult, verdict: Verdict) -> bool:
        """Whether a run shows what is wanted, with only the faults allowed."""
        return not outcome.void and outcome.faults <= self.allowed and self.wanted(verdict)

    def __call__(self, outcome: RunResult, stage: str) -> bool:
        """Whether ``outcome`` is a find, confirmed; the first is recorded with its cost."""
        result = self.result
        result.examples += 1
        result.decisions += outcome.decisions
        result.errors += len(outcome.errors)
        result.first_error = result.first_error or next(iter(outcome.errors), "")
        if outcome.unseen is not None:
            result.unseen += outcome.unseen.commands
            result.first_unseen = result.first_unseen or outcome.unseen.first
        result.off_clock.add(outcome.off_clock)
        self.on_example(result)
        if outcome.void:
            result.void += 1
            return False
        if not outcome.faults <= self.allowed:
            return False
        verdict = check(outcome.history, result.setup.judge, outcome.ttls)
        if not self.wanted(verdict):
            return False
        if not self.confirmed(outcome):
            result.unconfirmed_count += 1
            if len(result.unconfirmed) < UNCONFIRMED_KEPT:
                result.unconfirmed.append((outcome, verdict))
            return False
        if result.found is None:
            result.examples_to_find = result.examples
            result.seconds_to_find = time.perf_counter() - self.started
            result.first_steps = len(outcome.actions)
            result.stage = stage
        result.found, result.verdict = outcome, verdict
        return True

    def confirmed(self, outcome: RunResult) -> bool:
        """Whether the schedule fails again on each of ``CONFIRM`` re-runs. A void re-run says
        nothing and is run again, up to twice as many runs in all."""
        shown = 0
        for _ in range(2 * CONFIRM):
            again, verdict = run_actions(self.result.setup, self.admin, outcome.actions)
            if again.void:
                continue
            if not self.fails(again, verdict):
                return False
            shown += 1
            if shown == CONFIRM:
                return True
        return False


def explore(
    setup: Setup,
    *,
    wanted: Callable[[Verdict], bool] = lambda verdict: not verdict.valid,
    space: Space | None = None,
    max_examples: int = 300,
    seed: int | None = None,
    on_example: Callable[[Exploration], None] = lambda _: None,
    after: Sequence[Action] | None = None,
) -> Exploration:
    """The bounded stage (``bounded``), then Hypothesis, each of whose schedules draws what it
    may use (``draw_swarm``): one in eight has none of the faults, for races between round trips
    that need more than one preemption. Given ``after`` (an earlier find), the bounded stage
    first goes on from it, for a few schedules (``AFTER_MOST``): one flaw leads to the next (a
    key left with no TTL refuses for good once its window is past).

    Then the faults a find holds are put to the test, smallest first. A search with no fault
    at all comes first: half the bounded stage's schedules, within its bound with no fault
    (a small one), then a few at random. If it finds nothing and the find holds two faults or
    more, each is left out in turn, in shorter searches (``NEED_DIVISOR``); a find of one fault
    could only give way to one of none, which the first search asked for. A find with fewer
    faults takes the find's place (one with as many, but others, does not: the flaw keeps the
    faults that showed it first). A fault none of them could do without is one the flaw
    needs."""
    space = space or Space()
    result = _explore(
        setup,
        wanted,
        space,
        max_examples=max_examples,
        seed=seed,
        on_example=on_example,
        after=after,
    )
    every = frozenset(space.nemeses)
    spared: frozenset[str] = frozenset()  # faults the flaw was shown without
    tried: set[frozenset[str]] = set()
    while result.found is not None and result.verdict is not None and result.faults:
        untried = [w for w in _removals(result.faults, every, spared) if w not in tried]
        if not untried:
            break
        without, kinds = untried[0], result.kinds
        tried.add(without)
        few, most = _need_budget(without == every, max_examples)
        again = _explore(
            setup,
            _same_flaw(wanted, kinds),
            replace(space, nemeses=tuple(n for n in space.nemeses if n not in without)),
            max_examples=few,
            bounded_most=most,
            seed=seed,
            on_example=on_example,
        )
        result.examples += again.examples
        result.need_runs += again.examples
        result.seconds += again.seconds
        result.unseen += again.unseen
        result.off_clock.add(again.off_clock)
        if again.found is not None and len(again.faults) < len(result.faults):
            # the trace shown is this one: so is how it was found
            spared = without
            result.found, result.verdict = again.found, again.verdict
            result.stage, result.first_steps = again.stage, again.first_steps
    return result


def _need_budget(no_fault: bool, max_examples: int) -> tuple[int, int]:
    """The schedules of a search for what a flaw needs (see ``explore``), random and bounded:
    a few at random; and half the bounded stage's with no fault, else as few as at random. (A
    flaw that needs no fault but time moves beyond the bounded stage's reach, as the boundary
    attack's, is drawn at random.)"""
    few = max(1, min(max_examples // NEED_DIVISOR, NEED_MOST))
    return few, min(max_examples, BOUNDED_MOST) // 2 if no_fault else few


def _removals(
    faults: frozenset[str], every: frozenset[str], spared: frozenset[str]
) -> list[frozenset[str]]:
    """What to try a find without, smallest first: every fault (the flaw needs none); then
    each fault it holds, beside those the flaw was shown without. A find of one fault is
    replaced only by one of none, which the first search asks for: nothing follows it."""
    if len(faults) == 1:
        return [every]
    return [every, *(spared | {fault} for fault in sorted(faults))]


def explore_every_kind(
    setup: Setup,
    *,
    space: Space | None = None,
    max_examples: int = 300,
    seed: int | None = None,
    on_example: Callable[[Exploration], None] = lambda _: None,
) -> list[Exploration]:
    """``explore`` again and again, each time for a kind of violation not found yet, until a
    search finds nothing new: one shortest schedule per flaw. Each search first goes on from
    the last find. The last search found nothing (it is there for its figures), unless every
    kind was found."""
    searches: list[Exploration] = []
    seen: set[str] = set()
    last: RunResult | None = None
    while True:
        found = explore(
            setup,
            wanted=_new_kind(frozenset(seen)),
            space=space,
            max_examples=max_examples,
            seed=seed,
            on_example=on_example,
            after=last.actions if last else None,
        )
        searches.append(found)
        seen |= found.kinds  # each find has a kind not seen before: the loop ends
        if found.found is None:
            return searches
        last = found.found


def _new_kind(seen: frozenset[str]) -> Callable[[Verdict], bool]:
    return lambda verdict: bool(verdict.kinds - seen)


def _same_flaw(wanted: Callable[[Verdict], bool], kinds: set[str]) -> Callable[[Verdict], bool]:
    return lambda verdict: wanted(verdict) and bool(verdict.kinds & kinds)


def _explore(
    setup: Setup,
    wanted: Callable[[Verdict], bool],
    space: Space,
    *,
    max_examples: int,
    seed: int | None,
    on_example: Callable[[Exploration], None],
    bounded_most: int | None = None,
    after: Sequence[Action] | None = None,
) -> Exploration:
    """One search: the bounded stage, of ``bounded_most`` schedules at most (``max_examples``
    and ``BOUNDED_MOST``, the lesser, if not given), first on from ``after`` if given; then,
    if it found nothing, ``max_examples`` random ones (none: no random stage)."""
    result = Exploration(setup)
    admin = redis.Redis.from_url(setup.url)
    allowed = frozenset(space.nemeses)
    judge = _Judge(result, wanted, on_example, time.perf_counter(), admin, allowed)
    try:
        with scheduled():
            most = min(max_examples, BOUNDED_MOST) if bounded_most is None else bounded_most
            found = after is not None and _bounded_after(setup, admin, space, judge, after)
            if not found and not _bounded(setup, admin, space, judge, most) and max_examples:
                _search(admin, judge, space, max_examples=max_examples, seed=seed)
            if result.found is not None:
                _minimize(admin, judge)
            return result
    finally:
        admin.close()
        result.seconds = time.perf_counter() - judge.started


def _bounded(setup: Setup, admin: redis.Redis, space: Space, judge: _Judge, budget: int) -> bool:
    """The bounded stage (``bounded``), within ``budget`` schedules: whether it found what is
    wanted."""
    coverage = _stream(setup, _bound(setup, space)).read(
        lambda: Run(setup, admin),
        lambda outcome: judge(outcome, "bounded"),
        budget,
    )
    judge.result.coverage = coverage
    return coverage.found


def _bounded_after(
    setup: Setup, admin: redis.Redis, space: Space, judge: _Judge, after: Sequence[Action]
) -> bool:
    """The bounded stage on from ``after``, within ``AFTER_MOST`` schedules: whether it found
    what is wanted."""
    schedules = bounded.Schedules(setup.policy, _bound(setup, space), after)
    coverage = schedules.read(
        lambda: Run(setup, admin), lambda outcome: judge(outcome, "bounded"), AFTER_MOST
    )
    judge.result.after_runs = coverage.schedules
    return coverage.found


def _bound(setup: Setup, space: Space) -> bounded.Bound:
    bound = bounded.bound_for(
        setup.policy, setup.instances, space.nemeses, space.costs, setup.give_backs
    )
    return replace(bound, identities=space.identities[:1])


K = TypeVar("K")
V = TypeVar("V")


class _Recent(Generic[K, V]):
    """The values of the last ``kept`` keys used, the one used longest ago forgotten first;
    safe across threads (the pytest plugin may run searches in several)."""

    def __init__(self, kept: int) -> None:
        self._kept = kept
        self._values: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            if key in self._values:
                self._values.move_to_end(key)
            return self._values.get(key)

    def get_or_make(self, key: K, make: Callable[[], V]) -> V:
        """The value of ``key``; where there is none, ``make()``'s, kept."""
        with self._lock:
            if key not in self._values:
                self._put(key, make())
            self._values.move_to_end(key)
            return self._values[key]

    def put(self, key: K, value: V) -> None:
        with self._lock:
            self._put(key, value)

    def clear(self) -> None:
        with self._lock:
            self._values.clear()

    def _put(self, key: K, value: V) -> None:
        self._values[key] = value
        self._values.move_to_end(key)  # a key put again is the newest
        while len(self._values) > self._kept:
            self._values.popitem(last=False)


# the searches of a race-test row, or of race, read one stream each
_STREAMS: _Recent[tuple[Setup, bounded.Bound], bounded.Schedules] = _Recent(4)


def _stream(setup: Setup, bound: bounded.Bound) -> bounded.Schedules:
    """The bounded stage's schedules for ``setup`` within ``bound``: those already run by an
    earlier search of the same setup (one for each kind of flaw) are read again, not run."""
    return _STREAMS.get_or_make((setup, bound), lambda: bounded.Schedules(setup.policy, bound))


# what decides the random stage's draws: the setup, the space, the seed and the budget
Drawing = tuple[Setup, Space, int, int]
# the random stage's outcomes, in the order drawn, of searches that drew their whole budget: a
# later search that would draw the same (for another kind of flaw, or what a flaw needs) judges
# them again, not running them
_DRAWN: _Recent[Drawing, list[RunResult]] = _Recent(4)


def _minimize(admin: redis.Redis, judge: _Judge) -> None:
    result = judge.result
    assert result.found is not None

    def attempt(actions: list[Action]) -> tuple[RunResult, Verdict]:
        result.shrink_runs += 1
        judge.on_example(result)
        return run_actions(result.setup, admin, actions)

    def fails(outcome: tuple[RunResult, Verdict]) -> bool:
        return judge.fails(*outcome)

    gentler = [FAULTS[name].gentler for name in sorted(judge.allowed)]
    shorter = minimize(result.found.actions, attempt, fails, gentler)
    if shorter is not None:
        result.found, result.verdict = shorter


def _search(
    admin: redis.Redis,
    judge: _Judge,
    space: Space,
    *,
    max_examples: int,
    seed: int | None,
) -> None:
    setup = judge.result.setup
    judge.result.seed = seed if seed is not None else derived_seed(setup, space)
    drawing = (setup, space, judge.result.seed, max_examples)
    before = _DRAWN.get(drawing)
    if before is not None:  # drawn whole by an earlier search: judged again, not run
        for outcome in before:
            if judge(outcome, "search"):
                break
        return
    outcomes: list[RunResult] = []

    @settings(
        max_examples=max_examples,
        database=None,
        deadline=None,
        phases=[Phase.generate],  # shrinking is minimize's
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
        print_blob=False,
        verbosity=Verbosity.quiet,
    )
    @given(st.data())
    def search(data: st.DataObject) -> None:
        try:
            outcomes.append(_drawn(setup, admin, space, data))
            found = judge(outcomes[-1], "search")
        except HypothesisException:
            raise
        except Exception as error:  # a broken run ends the search with its cause
            raise _Stop(error) from None
        if found:
            raise _Stop

    search = fixed_seed(judge.result.seed)(search)
    try:
        search()
    except _Stop as stop:
        if stop.error is not None:
            raise stop.error from None
    except Flaky as error:  # never out of a race: the search ends, and says why
        judge.result.search_ended = described(error)
    else:
        _DRAWN.put(drawing, outcomes)


def derived_seed(setup: Setup, space: Space) -> int:
    """The random stage's seed where none is given: one for each limiter, policy, number of
    instances and space, so the same command draws the same schedules, and gives the same
    verdict, on every run. Another seed draws others."""
    said = f"{name_of(setup.limiter)} {setup.judge} {setup.instances} {space}"
    return zlib.crc32(said.encode())


def _drawn(setup: Setup, admin: redis.Redis, space: Space, data: st.DataObject) -> RunResult:
    """Run one schedule drawn as it goes, each action from what is enabled at its point."""
    swarm = draw_swarm(data, space)
    run = Run(setup, admin)
    try:
        for opening in draw_opening(data, run, swarm):
            run.apply(opening)
        for _ in range(data.draw(st.integers(1, space.max_actions))):
            actions = draw_actions(data, run, swarm)
            if not actions:
                break
            for action in actions:
                run.apply(action)
        if "crash" not in space.nemeses:
            run.complete()  # else the schedule's end would cut a request short: a crash
    finally:
        outcome = run.finish()
    return outcome
