"""One identity's aligned fixed windows judged as its operations come, in bounded memory.

``fixed_window`` judges an identity's operations all at once, so an identity hammered for hours
needs memory for every one of them. ``WindowStream`` takes them one at a time, in order of
invoke, and finds the same over-admissions and wrongful rejections, with the same witnesses
(``tests`` and ``property_tests`` hold it to ``fixed_window``). It keeps only what a later
operation can still change:

- for over-admission, the admissions the earliest-deadline-first matching has not yet given a
  window (those of the open windows), and those of the last ``KEPT_WINDOWS`` windows, from which
  a witness's run of windows is built (fewer when they hold over ``KEPT_ADMISSIONS``);
- for wrongful rejection, the admitted and unknown operations that may still fall in the window
  of a rejection to come (invoked or completed within about a window of the earliest rejection
  not yet judged), and the rejections whose completion is still ahead of the latest invoke.

That is O(the operations of a few windows, and those in flight), whatever the history's length.
Each kind keeps its count and its first ``MAX_WITNESSES`` witnesses (the verdict lists no more).

Some histories need the whole identity, and ``NotStreamable`` says why: a policy other than
plain aligned windows (a block, attempts counted, a composite), a weighted request or a
give-back, operations out of order of invoke, a witness whose run of windows reaches back past
those kept, and a history that only a shift of every edge (``fixed_window._shifts``) can match:
the shifts are tried on the whole history, and fewer than ``MANY_CROSSINGS`` instants near an
edge leave them to try. The caller then judges the identity whole, as ``fixed_window`` does.
"""

from __future__ import annotations

import heapq
import math
import operator
from collections.abc import Callable, Collection, Sequence
from typing import Any

import numpy as np

from ratelimit_harness.harness.checkers.columns import Floats
from ratelimit_harness.harness.checkers.edges import EDGE, windows_touched
from ratelimit_harness.harness.checkers.fixed_window import ANY_SIDE, run_witness
from ratelimit_harness.harness.checkers.parts import OVER, WRONG
from ratelimit_harness.harness.checkers.rejections import accused, room_left
from ratelimit_harness.harness.checkers.timeline import decided_by, window_params
from ratelimit_harness.harness.history import Operation, Outcome
from ratelimit_harness.harness.history.verdict import MAX_WITNESSES, Witness
from ratelimit_harness.limiters.policy import Policy

ALIGNED = ("fixed-window", "fixed-window:phase=crc32")
KEPT_WINDOWS = 16  # windows of admissions kept back for a witness's run of windows
KEPT_ADMISSIONS = 100_000  # fewer windows kept back when they hold more admissions than this
MANY_CROSSINGS = 31  # instants this near an edge make more shifts than fixed_window tries
FORGET_AT = 1024  # instants let go of at once, at the least

Entry = tuple[int, int, Operation]  # (last window, line number, admission), as EDF orders them
Found = dict[str, tuple[int, list[Witness]]]  # kind -> count, first witnesses
_INVOKE, _COST, _REFUND = (operator.itemgetter(i) for i in (2, 7, 8))  # of an Operation
_FIRST = operator.itemgetter(0)


class NotStreamable(Exception):
    """The identity must be judged whole; the message says why."""


def streamable(policy: Policy) -> bool:
    """Whether ``policy``'s findings can be judged as a stream: plain aligned fixed windows."""
    return (
        policy.promise in ALIGNED
        and not policy.block
        and policy.count != "attempts"
        and not policy.limits
    )


def not_streamable(policy: Policy) -> str:
    """Why ``policy``'s findings are not judged as a stream."""
    return f"{policy} is judged on the whole identity"


class WindowStream:
    """One identity's operations, judged as they come (``add``) and found at the end
    (``finish``). ``kinds``: those of ``OVER`` and ``WRONG`` to judge."""

    def __init__(self, key: str, policy: Policy, kinds: Collection[str] = (OVER, WRONG)) -> None:
        if not streamable(policy):
            raise NotStreamable(not_streamable(policy))
        self.key = key
        self.limit, self.window = window_params(policy)
        self.origin = policy.origin(key)
        self.latest = -math.inf  # the latest invoke so far
        self.over = _Admissions(self) if OVER in kinds else None
        self.wrong = _Rejections(self) if WRONG in kinds else None

    def add(self, numbers: Sequence[int], ops: Sequence[Operation]) -> None:
        """The next operations, on lines ``numbers``, in order of invoke (none invoked before
        the last one added)."""
        if not ops:
            return
        invokes = list(map(_INVOKE, ops))
        if invokes[0] < self.latest or not all(map(operator.le, invokes, invokes[1:])):
            raise NotStreamable("its operations are not in order of invoke")
        if any(cost != 1 for cost in map(_COST, ops)) or any(map(_REFUND, ops)):
            raise NotStreamable("a request is weighted or given back")
        self.latest = invokes[-1]
        if self.over:
            for number, op in zip(numbers, ops, strict=True):
                if op.outcome is Outcome.ALLOWED:
                    self.over.add(number, op)
        if self.wrong:
            self.wrong.add(numbers, ops, self.latest)

    def finish(self) -> Found:
        """Each kind found: its count and its first witnesses, as ``fixed_window`` lists them."""
        found: Found = {}
        for kind, judged in ((OVER, self.over), (WRONG, self.wrong)):
            if judged:
                count, witnesses = judged.finish()
                if count:
                    found[kind] = (count, witnesses)
        return found


class _Matching:
    """Earliest deadline first over spans of windows (``fixed_window._unmatched``), the spans
    coming in order of their first window: each window takes up to ``limit`` of those released
    by then, the earliest last window first; one whose last window has passed is dropped, and
    ``dropped`` hears of it (the window, and what it dropped, in the order dropped)."""

    def __init__(self, limit: int, dropped: Callable[[int, list[Entry]], None] | None = None):
        self.limit = limit
        self.dropped = dropped
        self.pending: list[Entry] = []
        self.current: int | None = None  # the next window to take
        self.drops = 0

    def add(self, first: int, last: int, number: int, op: Operation) -> None:
        self.close(first)
        heapq.heappush(self.pending, (last, number, op))

    def close(self, until: int) -> None:
        """Take the windows before ``until``: every span they release has come."""
        while self.pending and self.current is not None and self.current < until:
            self._take()
        if not self.pending:
            self.current = until if self.current is None else max(self.current, until)

    def finish(self) -> None:
        while self.pending:
            self._take()

    def _take(self) -> None:
        window = self.current
        assert window is not None
        drops = []
        while self.pending and self.pending[0][0] < window:
            drops.append(heapq.heappop(self.pending))
        for _ in range(min(self.limit, len(self.pending))):
            heapq.heappop(self.pending)
        self.current = window + 1
        if drops:
            self.drops += len(drops)
            if self.dropped:
                self.dropped(window, drops)


class _Admissions:
    """Over-admission, as ``fixed_window.over_admissions`` finds it: matched as they are, and
    with every admission free to count on either side of an edge it comes within ``EDGE`` of
    (whose drops are the witnesses); the instants near an edge counted for the shifts."""

    def __init__(self, stream: WindowStream) -> None:
        self.stream = stream
        self.as_they_are = _Matching(stream.limit)
        self.either_side = _Matching(stream.limit, self._dropped)
        self.crossing: set[float] = set()
        self.kept: dict[int, list[tuple[int, int, int, Operation]]] = {}  # by first window
        self.kept_count = 0
        self.kept_from = -math.inf  # every span whose first window is this or later is kept
        self.first_ever: int | None = None
        self.count = 0
        self.witnesses: list[Witness] = []

    def add(self, number: int, op: Operation) -> None:
        window, origin = self.stream.window, self.stream.origin
        assert op.complete is not None  # an admission completed
        start, end = op.invoke - origin, op.complete - origin
        self.as_they_are.add(math.floor(start / window), math.floor(end / window), number, op)
        first, last = windows_touched(start, end, window)
        self.either_side.add(first, last, number, op)
        if self.first_ever is None:
            self.first_ever = first
        self.kept.setdefault(first, []).append((first, last, number, op))
        self.kept_count += 1
        self._forget()
        if len(self.crossing) < MANY_CROSSINGS:
            for instant in (start, end):
                past = instant - round(instant / window) * window
                if abs(past) < EDGE:
                    self.crossing.add(past)

    def _forget(self) -> None:
        """Let go of the windows too far back for a witness's run (``KEPT_WINDOWS``), and of
        more while too many admissions are kept, but the last two windows."""
        current = self.either_side.current
        assert current is not None
        while self.kept:
            first = next(iter(self.kept))  # the oldest: first windows come in order
            too_many = self.kept_count > KEPT_ADMISSIONS and first < current - 2
            if first >= current - KEPT_WINDOWS and not too_many:
                break
            self.kept_count -= len(self.kept.pop(first))
            self.kept_from = first + 1

    def _dropped(self, window: int, drops: list[Entry]) -> None:
        """The witnesses of the admissions dropped at ``window`` (``fixed_window._witnesses``):
        for each, the shortest run of windows ending at its last that holds more admissions
        than it has room for; admissions dropped from one run share its witness."""
        limit, origin = self.stream.limit, self.stream.origin
        runs: dict[tuple[int, int], tuple[int, list[Operation]]] = {}
        by_run: dict[tuple[int, int], Witness] = {}
        for _, _, op in drops:
            assert op.complete is not None
            touched = windows_touched(op.invoke - origin, op.complete - origin, self.stream.window)
            if touched not in runs:
                runs[touched] = self._run(*touched)
            start, inside = runs[touched]
            run = (start, touched[1])
            found = by_run.get(run)
            if found is None:
                windows = (limit, self.stream.window, origin)
                by_run[run] = run_witness(self.stream.key, inside, run, windows, ANY_SIDE)
            else:
                by_run[run] = Witness(
                    found.key, found.span, found.operations, found.detail, found.excess + 1
                )
        for witness in by_run.values():
            self.count += witness.excess
            if len(self.witnesses) < MAX_WITNESSES:
                self.witnesses.append(witness)

    def _run(self, start: int, last: int) -> tuple[int, list[Operation]]:
        """The first window of the shortest run ending at ``last`` (starting at ``start`` or
        before) whose admissions outnumber its room, and its admissions."""
        assert self.first_ever is not None
        while True:
            if start < self.kept_from:
                raise NotStreamable("a witness's run of windows reaches back past those kept")
            spans = sorted(
                span for first in range(start, last + 1) for span in self.kept.get(first, ())
            )
            inside = [op for _, final, _, op in spans if final <= last]
            if len(inside) > self.stream.limit * (last - start + 1) or start <= self.first_ever:
                return start, inside
            start -= 1

    def finish(self) -> tuple[int, list[Witness]]:
        self.as_they_are.finish()
        self.either_side.finish()
        if not self.as_they_are.drops:
            return 0, []
        if self.either_side.drops:
            return self.count, self.witnesses
        if len(self.crossing) >= MANY_CROSSINGS:
            return 0, []  # more shifts than fixed_window tries: the benefit of the doubt
        raise NotStreamable("only a shift of every edge may match it: tried on the whole")


class _Rejections:
    """Wrongful rejection, as ``fixed_window.wrongful_rejections`` finds it: a rejection is
    judged once an operation invoked after its completion has come (every operation that can
    fall in its windows has then come), against the admitted and unknown ones that can be
    placed in each window it may count in, up to its instant. The rejections are judged a batch
    at a time: first in the window of their invoke, all at once; the few with room left there,
    in every window they may count in."""

    def __init__(self, stream: WindowStream) -> None:
        self.stream = stream
        # of the admitted and unknown operations: the invokes, and the completions (but those
        # never completed: they never end before a window)
        self.starts, self.ends = _Instants(), _Instants()
        self.waiting: list[tuple[float, int, Operation]] = []  # (completion, line, rejection)
        self.count = 0
        self.earliest: list[tuple[int, Witness]] = []  # (-line, witness): the first lines

    def add(self, numbers: Sequence[int], ops: Sequence[Operation], latest: float) -> None:
        """The next operations (``latest``: the last one's invoke)."""
        placed = [op for op in ops if op.outcome is not Outcome.REJECTED]
        self.starts.add(np.fromiter(map(_INVOKE, placed), np.float64, len(placed)))
        ends = [op.complete for op in placed if op.complete is not None]
        self.ends.add(np.array(ends, dtype=np.float64))
        for number, op in zip(numbers, ops, strict=True):
            if op.outcome is Outcome.REJECTED:
                self.waiting.append((decided_by(op), number, op))
        self._judge(before=latest)
        # a window a rejection still to judge counts in starts less than a window and two
        # edges before its invoke: what lies before that is let go of
        earliest = min((op.invoke for _, _, op in self.waiting), default=latest)
        low = earliest - self.stream.window - 4 * EDGE
        self.starts.forget(low)
        self.ends.forget(low)

    def _judge(self, before: float) -> None:
        """Judge the rejections that completed before ``before``."""
        waiting = self.waiting
        completions = np.fromiter(map(_FIRST, waiting), np.float64, len(waiting))
        due = completions < before
        if not due.any():
            return
        judged = [waiting[i] for i in np.flatnonzero(due).tolist()]
        self.waiting = [waiting[i] for i in np.flatnonzero(~due).tolist()]
        limit, window, origin = self.stream.limit, self.stream.window, self.stream.origin
        invokes = np.fromiter((op.invoke for _, _, op in judged), np.float64, len(judged))
        lasts = completions[due]
        k = np.floor((invokes - origin - EDGE) / window)  # windows_touched's first
        until = np.minimum(lasts, (k + 1) * window + origin + EDGE)
        since = k * window + origin - EDGE
        at_least = self.starts.at_most(until) - self.ends.before(since)
        for (_, number, op), bound in zip(judged, at_least.tolist(), strict=True):
            if bound >= limit:
                continue  # no room in that window: right, whatever the others
            used = self._most_used(op, enough=limit)
            if room_left(used, 1, limit, whole=False):
                self.count += 1
                budget = f"{limit:.3g} admissions in its window"
                entry = (-number, accused(self.stream.key, op, used, budget))
                if len(self.earliest) < MAX_WITNESSES:
                    heapq.heappush(self.earliest, entry)
                elif entry[0] > self.earliest[0][0]:
                    heapq.heapreplace(self.earliest, entry)

    def _most_used(self, op: Operation, enough: int) -> int:
        """The most admissions any placement puts in a window ``op`` may count in, up to its
        instant (``fixed_window.wrongful_rejections``' ``most_used``), or ``enough`` or more
        once that many are found (the rejection is then right, whatever the most)."""
        window, origin = self.stream.window, self.stream.origin
        last = decided_by(op)
        first_window, last_window = windows_touched(op.invoke - origin, last - origin, window)
        most = 0
        for k in range(first_window, last_window + 1):
            until = min(last, (k + 1) * window + origin + EDGE)
            since = k * window + origin - EDGE
            placed = self.starts.at_most(np.float64(until)) - self.ends.before(np.float64(since))
            most = max(most, int(placed))
            if most >= enough:
                break
        return most

    def finish(self) -> tuple[int, list[Witness]]:
        self._judge(before=math.inf)
        ordered = sorted(self.earliest, key=lambda entry: -entry[0])
        return self.count, [witness for _, witness in ordered]


class _Instants:
    """Instants kept in order, and counted; those before the earliest still asked about are
    let go of, and only counted."""

    def __init__(self) -> None:
        self.kept: Floats = np.empty(0)
        self.gone = 0

    def add(self, instants: Floats) -> None:
        if instants.size:
            self.kept = np.sort(np.concatenate((self.kept, instants)), kind="stable")

    def at_most(self, instants: Any) -> Any:
        """How many are at or before each of ``instants``."""
        return self.gone + np.searchsorted(self.kept, instants, "right")

    def before(self, instants: Any) -> Any:
        """How many are before each of ``instants``."""
        return self.gone + np.searchsorted(self.kept, instants, "left")

    def forget(self, low: float) -> None:
        """Let go of those before ``low``, once there are ``FORGET_AT`` of them and they are
        most of those kept: no later question asks about an instant before it."""
        past = int(np.searchsorted(self.kept, low, "left"))
        if past > FORGET_AT and past * 2 > len(self.kept):
            self.kept = self.kept[past:].copy()
            self.gone += past
