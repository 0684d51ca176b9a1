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
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import NamedTuple

from ratelimit_harness.harness.history import Operation, Outcome
from ratelimit_harness.harness.history.verdict import Witness
from ratelimit_harness.limiters.policy import Policy

JUDGED_KINDS = ("fixed-window", "sliding-window")


class Promise(NamedTuple):
    key: str
    invoke: float
    complete: float
    remaining: int


class PromiseLog:
    """One process's promises, per rule, appended a line at a time (thread-safe)."""

    def __init__(self, run_dir: Path) -> None:
        self.root = run_dir / "promises"
        self._fds: dict[str, int] = {}
        self._lock = threading.Lock()

    def add(self, rule: str, promise: Promise) -> None:
        line = (json.dumps(promise._asdict()) + "\n").encode()
        with self._lock:
            fd = self._fds.get(rule)
            if fd is None:
                (self.root / rule).mkdir(parents=True, exist_ok=True)
                path = self.root / rule / f"locust-{os.getpid()}.jsonl"
                flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC
                fd = self._fds[rule] = os.open(path, flags, 0o644)
            os.write(fd, line)


def read_promises(run_dir: Path, rule: str) -> list[Promise]:
    """Every promise recorded for ``rule``; a torn last line (a killed process) is skipped."""
    found = []
    for path in sorted((run_dir / "promises" / rule).glob("*.jsonl")):
        for line in path.read_text().splitlines():
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
    limits = [p for p in policy.limits or (policy,) if p.promise in JUDGED_KINDS]
    if not limits:
        return []
    admitted: dict[str, list[Operation]] = defaultdict(list)
    for op in history:
        if op.outcome is Outcome.ALLOWED and op.complete is not None:
            admitted[op.key].append(op)
    found = []
    for promise in promises:
        for limit in limits:
            broken = _broken(promise, admitted.get(promise.key, []), limit)
            if broken is not None:
                if policy.limits:
                    broken = replace(broken, detail=f"under {limit}: {broken.detail}")
                found.append(broken)
                break
    return found


def _broken(promise: Promise, admitted: list[Operation], policy: Policy) -> Witness | None:
    """The witness that ``promise`` was more than ``policy`` (one limit) could grant, if it was."""
    limit, window = policy.limit, policy.window
    if limit is None or window is None:
        return None
    since = _counted_since(promise, policy, window)
    if since is None:
        return None
    before = [
        op
        for op in admitted
        if op.invoke >= since
        and op.complete is not None
        and op.complete < promise.invoke
        and (op.refund is None or op.refund[0] >= promise.complete)  # not given back by then
    ]
    room = limit - 1 - len(before)
    if promise.remaining <= room:
        return None
    detail = (
        f"told {promise.remaining} remain, but {len(before)} admissions already counted "
        f"in its window leave {max(room, 0)} after it"
    )
    span = (since, promise.complete)  # its window, up to the promise
    return Witness(promise.key, span, before[-3:], detail)


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
