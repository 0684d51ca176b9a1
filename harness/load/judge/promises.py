"""Whether ``X-RateLimit-Remaining`` promised more than the policy could grant.

An admitted request told ``r`` remain is promised ``r`` more admissions at once. Under a window
policy that is a lie when the admissions of the same identity that certainly count in the same
window, and certainly came before the request was sent, leave fewer than ``r`` after it:

- fixed window: admissions invoked at or after the start of the window the request's whole
  interval lies in (a request straddling a window edge is not judged), completed before it
  was sent;
- sliding window: admissions invoked after its completion minus the window, completed before
  it was sent.

An admission given back (``Operation.refund``) counts only if its give-back began after the
promise was received.

Under a composite policy (several limits) a request passes only if every limit has room, so a
promise is held to each limit of those kinds, and broken if one has too little.

Each Locust process appends the promises it was given, one line per admitted request, to
``RUN_DIR/promises/RULE/<process>-<pid>.jsonl`` (``PromiseLog``). Buckets and the sliding
counter refill or weigh continuously; they are held only to ``r < budget`` (``truth.py``).
"""

from __future__ import annotations

import json
import math
import os
import threading
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ratelimit_harness.harness.history import Operation, Outcome
from ratelimit_harness.harness.history.appends import AppendFile
from ratelimit_harness.harness.history.verdict import Witness
from ratelimit_harness.harness.load.faults.effects import fell_in
from ratelimit_harness.limiters.policy import Policy

JUDGED_KINDS = ("fixed-window", "sliding-window")


class Promise(NamedTuple):
    key: str
    invoke: float
    complete: float
    remaining: int


class PromiseLog:
    """One process's promises, per rule, appended a line at a time (thread-safe); with
    ``hold_for`` seconds, held in memory at most that long and written together
    (``AppendFile.hold``: a kill loses those held, and with them only checks)."""

    def __init__(self, run_dir: Path, *, hold_for: float = 0.0) -> None:
        self.root = run_dir / "promises"
        self.hold_for = hold_for
        self._files: dict[str, AppendFile] = {}
        self._keys_json: dict[str, str] = {}  # each identity as JSON, written once
        self._lock = threading.Lock()

    def add(self, rule: str, promise: Promise) -> None:
        key, invoke, complete, remaining = promise
        key_json = self._keys_json.get(key) or self._keys_json.setdefault(key, json.dumps(key))
        line = (
            f'{{"key": {key_json}, "invoke": {float(invoke)!r}, '
            f'"complete": {float(complete)!r}, "remaining": {int(remaining)}}}\n'
        ).encode()
        file = self._files.get(rule) or self._open(rule)
        file.hold(line)

    def flush(self) -> None:
        """The promises held, to the OS now."""
        for file in list(self._files.values()):
            file.flush()

    def _open(self, rule: str) -> AppendFile:
        with self._lock:
            if rule not in self._files:
                (self.root / rule).mkdir(parents=True, exist_ok=True)
                path = self.root / rule / f"locust-{os.getpid()}.jsonl"
                self._files[rule] = AppendFile(path, exclusive=False, hold_for=self.hold_for)
            return self._files[rule]


def read_promises(run_dir: Path, rule: str) -> list[Promise]:
    """Every promise recorded for ``rule``; a torn last line (a killed process) is skipped."""
    found = []
    for path in promise_paths(run_dir, rule):
        for line in Path(path).read_text().splitlines():
            try:
                found.append(Promise(**json.loads(line)))
            except (ValueError, TypeError):
                continue
    return found


def broken_promises(
    promises: Iterable[Promise], history: Sequence[Operation], policy: Policy
) -> list[Witness]:
    """The promises that the history proves were more than ``policy`` could grant; each
    witness spans the promise's window up to it, with the last admissions it forgot. Under a
    composite policy a request passes only if every limit has room, so "r remain" is broken
    when any one limit has fewer than r left."""
    return [witness for _, witness in _broken_each(promises, history, policy)]


def _broken_each(
    promises: Iterable[Promise], history: Sequence[Operation], policy: Policy
) -> Iterator[tuple[int, Witness]]:
    """``broken_promises``, each with its promise's place in ``promises``."""
    limits = [p for p in policy.limits or (policy,) if p.promise in JUDGED_KINDS]
    if not limits:
        return
    admitted: dict[str, list[Operation]] = defaultdict(list)
    for op in history:
        if op.outcome is Outcome.ALLOWED and op.complete is not None:
            admitted[op.key].append(op)
    counted = {key: Admissions(ops) for key, ops in admitted.items()}
    nothing = Admissions([])
    for index, promise in enumerate(promises):
        for limit in limits:
            broken = _broken(promise, counted.get(promise.key, nothing), limit)
            if broken is not None:
                if policy.limits:
                    broken = replace(broken, detail=f"under {limit}: {broken.detail}")
                yield index, broken
                break


@dataclass
class BrokenPromises:
    """The broken promises of a rule: how many, the first (by its line across the promise
    files, with that line's number), and how many fell in each fault's span."""

    count: int = 0
    first: tuple[int, Witness] | None = None
    per_span: list[int] = field(default_factory=list)

    @classmethod
    def joined(cls, found: Iterable[BrokenPromises], spans: int) -> BrokenPromises:
        """What parts of a history found, as one."""
        whole = cls(per_span=[0] * spans)
        for part in found:
            whole.count += part.count
            whole.per_span = [a + b for a, b in zip(whole.per_span, part.per_span, strict=True)]
            if part.first and (whole.first is None or part.first[0] < whole.first[0]):
                whole.first = part.first
        return whole


@dataclass(frozen=True)
class PromiseCheck:
    """A rule's promise files, held against its history part by part (a ``Beside`` of
    ``harness.checkers.partitions``): each part's ``BrokenPromises``, with the broken ones that
    fell in each of ``spans`` (the faults') counted."""

    paths: Sequence[str]
    policy: Policy
    spans: Sequence[tuple[float, float]] = ()
    admitted_only = True  # a promise is held against admissions only

    def __call__(
        self, operations: Sequence[Operation], records: list[tuple[int, bytes]]
    ) -> BrokenPromises:
        numbers, promises = [], []
        for number, line in records:
            try:
                promises.append(Promise(**json.loads(line)))
            except (ValueError, TypeError):  # a torn last line: a killed process's
                continue
            numbers.append(number)
        broken = list(_broken_each(promises, operations, self.policy))
        return BrokenPromises(
            len(broken),
            (numbers[broken[0][0]], broken[0][1]) if broken else None,
            fell_in([witness for _, witness in broken], self.spans),
        )


def promise_paths(run_dir: Path, rule: str) -> list[str]:
    """The files of the promises recorded for ``rule``, in the order they are read."""
    return sorted(map(str, (run_dir / "promises" / rule).glob("*.jsonl")))


def _broken(promise: Promise, admitted: Admissions, policy: Policy) -> Witness | None:
    """The witness that ``promise`` was more than ``policy`` (one limit) could grant, if it was."""
    limit, window = policy.limit, policy.window
    if limit is None or window is None:
        return None
    since = _counted_since(promise, policy, window)
    if since is None:
        return None
    before = admitted.count(since, promise.invoke, promise.complete)
    room = limit - 1 - before
    if promise.remaining <= room:
        return None
    detail = (
        f"told {promise.remaining} remain, but {before} admissions already counted "
        f"in its window leave {max(room, 0)} after it"
    )
    span = (since, promise.complete)  # its window, up to the promise
    last = admitted.counted(since, promise.invoke, promise.complete, last=3)
    return Witness(promise.key, span, last, detail)


class Admissions:
    """One identity's admissions, sorted so that a promise's count takes a few binary searches,
    not a pass over them all: an admission counts against a promise when it was invoked at or
    after ``since``, completed before the promise was ``sent``, and not given back before the
    promise was ``received``.

    With I, C and R an admission's invoke, completion and give-back (infinite if none), the
    count is #(I >= since, C < sent) less #(I >= since, C < sent, R < received). Each is a count
    by one column less the few admissions that straddle a bound: those invoked before ``since``
    that end (complete, or are given back) after the other bound, at most the longest interval
    before ``since``; and, since C <= R, those given back in time that completed after ``sent``,
    all completed within the promise's own interval."""

    def __init__(self, ops: Sequence[Operation]) -> None:
        self.ops = sorted(ops, key=lambda op: op.invoke)
        self.invoke = np.array([op.invoke for op in self.ops])
        self.complete = np.array([op.complete for op in self.ops], dtype=float)
        self.completes = np.sort(self.complete)
        self.longest = float((self.complete - self.invoke).max()) if self.ops else 0.0
        back = [op for op in self.ops if op.refund is not None]
        self.back_invoke = np.array([op.invoke for op in back])
        self.back_at = np.array([op.refund[0] for op in back if op.refund is not None])
        self.backs = np.sort(self.back_at)
        self.back_longest = float((self.back_at - self.back_invoke).max()) if back else 0.0
        by_completion = sorted(back, key=lambda op: op.complete or 0.0)
        self.back_by_complete = np.array([op.complete for op in by_completion], dtype=float)
        self.back_by_complete_invoke = np.array([op.invoke for op in by_completion])
        self.back_by_complete_at = np.array([op.refund[0] for op in by_completion if op.refund])

    def count(self, since: float, sent: float, received: float) -> int:
        """How many admissions count against a promise (see the class)."""
        if since >= sent:
            return 0  # none completed before it was invoked
        lo = int(np.searchsorted(self.invoke, since))
        early = int(np.searchsorted(self.invoke, since - self.longest))
        straddling = int(np.count_nonzero(self.complete[early:lo] >= sent))
        in_time = int(np.searchsorted(self.completes, sent)) - (lo - straddling)
        if not self.back_at.size:
            return in_time
        # given back before received, and invoked at or after since
        lo = int(np.searchsorted(self.back_invoke, since))
        early = int(np.searchsorted(self.back_invoke, since - self.back_longest))
        straddling = int(np.count_nonzero(self.back_at[early:lo] >= received))
        given_back = int(np.searchsorted(self.backs, received)) - (lo - straddling)
        # of those, the ones that completed at or after sent (so were never counted)
        first, last = np.searchsorted(self.back_by_complete, (sent, received))
        late = slice(int(first), int(last))
        uncounted = np.count_nonzero(
            (self.back_by_complete_invoke[late] >= since)
            & (self.back_by_complete_at[late] < received)
        )
        return in_time - (given_back - int(uncounted))

    def counted(
        self, since: float, sent: float, received: float, *, last: int | None = None
    ) -> list[Operation]:
        """The admissions ``count`` counts, in order of invoke (for a witness); only the
        ``last`` ones if given (found from the end, so a window's worth is not walked)."""
        lo, hi = (int(i) for i in np.searchsorted(self.invoke, (since, sent)))
        found: list[Operation] = []
        for at in range(hi - 1, lo - 1, -1):
            op = self.ops[at]
            if last is not None and len(found) == last:
                break
            if (
                op.complete is not None
                and op.complete < sent
                and (op.refund is None or op.refund[0] >= received)
            ):
                found.append(op)
        return found[::-1]


def _counted_since(promise: Promise, policy: Policy, window: float) -> float | None:
    """From when an admission certainly counts against the promise, or None (not judged).
    (An aligned window starts where the identity's phase puts it: ``Policy.origin``.)"""
    if policy.kind == "sliding-window":
        return promise.complete - window
    origin = policy.origin(promise.key)
    start = math.floor((promise.invoke - origin) / window) * window + origin
    if promise.complete >= start + window:
        return None  # the interval straddles a window edge: which window is not known
    return start
