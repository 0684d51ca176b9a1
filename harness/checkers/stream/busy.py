"""An identity too busy for a part of a history (``partitions``), judged as its operations
stream, so that one identity hammered for hours needs no more memory than one hammered for a
minute.

``Streamed`` feeds the identity's operations, in file order, to an ``IdentityStream`` and keeps
what the joined verdict needs besides its findings: the count of each outcome, the processes,
the first line, the Redis keys it touched (each with its first operation), and the latencies,
sorted ``LATENCY_BLOCK`` at a time into files (``latency_files``: a percentile is found across
sorted files). When the stream cannot judge it (``NotStreamable``), it stops, says why, and the
identity is judged whole, as before.
"""

from __future__ import annotations

import heapq
import math
import os
import tempfile
from collections import Counter
from collections.abc import Collection, Sequence
from operator import itemgetter

import numpy as np

from ratelimit_harness.harness.checkers.figures.latency_files import LatencyFile
from ratelimit_harness.harness.checkers.policies.sliding_counter import ExactLog, midpoint
from ratelimit_harness.harness.checkers.stream.common import Found, NotStreamable
from ratelimit_harness.harness.checkers.stream.identity import IdentityStream
from ratelimit_harness.harness.checkers.view.columns import Floats
from ratelimit_harness.harness.checkers.view.timeline import window_params
from ratelimit_harness.harness.history import Operation, Outcome
from ratelimit_harness.limiters.policy import Policy

LATENCY_BLOCK = 1 << 20  # latencies sorted and written at once: 8 MB
_PROCESS, _INVOKE, _COMPLETE, _OUTCOME, _KEYS = (itemgetter(i) for i in (0, 2, 3, 4, 6))
Owners = dict[str, dict[str, tuple[int, Operation]]]  # Redis key -> identity -> first (line, op)


class Streamed:
    """One identity's operations, judged as they come; ``whole_because`` is set once it must
    be judged whole instead. With ``keep``, its admissions are kept (``admitted``), for what is
    judged beside the history."""

    def __init__(
        self, key: str, policy: Policy, kinds: Collection[str], folder: str, keep: bool = False
    ) -> None:
        self.key = key
        self.keep = keep
        counter = policy.kind == "sliding-counter"
        self.replay = _Replay(*window_params(policy)) if counter else None
        self.admitted: list[tuple[int, Operation]] = []  # with ``keep``: (line, admission)
        self.stream = IdentityStream(key, policy, kinds)
        self.folder = folder
        self.whole_because: str | None = None
        self.operations = 0
        self.first_line = 0
        self.outcomes: Counter[Outcome] = Counter()
        self.processes: set[str] = set()
        self.owners: Owners = {}
        self.latencies: list[Floats] = []  # not yet written
        self.held = 0  # how many they hold
        self.latency_files: list[LatencyFile] = []
        self.timed = 0
        self.slowest = 0.0
        self.accuracy: dict[str, int] = {}  # the sliding counter's (``_Replay``)

    def add(self, numbers: Sequence[int], ops: Sequence[Operation]) -> None:
        """The identity's next operations, on lines ``numbers``, in file order."""
        if self.whole_because or not ops:
            return
        try:
            self.stream.add(numbers, ops)
        except NotStreamable as why:
            self.whole_because = str(why)
            self.latencies.clear()
            self.admitted.clear()
            return
        if self.replay:
            self.replay.add(numbers, ops)
        if not self.operations:
            self.first_line = numbers[0]
        self.operations += len(ops)
        self.outcomes.update(map(_OUTCOME, ops))
        self.processes.update(map(_PROCESS, ops))
        if self.keep:
            self.admitted += (
                (number, op)
                for number, op in zip(numbers, ops, strict=True)
                if op.outcome is Outcome.ALLOWED
            )
        if any(map(_KEYS, ops)):  # recorded by few drivers
            for number, op in zip(numbers, ops, strict=True):
                for key in op.keys:
                    self.owners.setdefault(key, {}).setdefault(op.key, (number, op))
        invokes = np.fromiter(map(_INVOKE, ops), np.float64, len(ops))
        completes = np.fromiter(map(_COMPLETE, ops), np.float64, len(ops))  # None: NaN
        completed = ~np.isnan(completes)
        self.latencies.append(completes[completed] - invokes[completed])
        self.held += int(completed.sum())
        if self.held >= LATENCY_BLOCK:
            self._write_latencies()

    def _write_latencies(self) -> None:
        ordered = np.sort(np.concatenate(self.latencies))
        handle, path = tempfile.mkstemp(prefix="latencies-", dir=self.folder)  # a name of its own
        os.close(handle)
        self.latency_files.append(LatencyFile.written(path, ordered))
        self.timed += len(ordered)
        self.slowest = max(self.slowest, float(ordered[-1]))
        self.latencies.clear()
        self.held = 0

    def finish(self) -> Found:
        """What the stream found (each kind's count and first witnesses); raises
        NotStreamable when the identity must be judged whole after all."""
        if self.whole_because:
            raise NotStreamable(self.whole_because)
        found = self.stream.finish()
        if self.replay:
            self.accuracy = self.replay.finish()
        if self.held:
            self._write_latencies()
        return found


class _Replay:
    """The sliding counter's accuracy (``sliding_counter.accuracy``), its decisions replayed as
    they come: each once no later one can come before it (in order of their midpoints, ties in
    file order), through one exact log."""

    def __init__(self, limit: int, window: float) -> None:
        self.log = ExactLog(limit, window)
        self.waiting: list[tuple[float, int, bool]] = []  # (midpoint, line, allowed)
        self.decisions = 0

    def add(self, numbers: Sequence[int], ops: Sequence[Operation]) -> None:
        for number, op in zip(numbers, ops, strict=True):
            if op.outcome is Outcome.ALLOWED or op.outcome is Outcome.REJECTED:
                heapq.heappush(self.waiting, (midpoint(op), number, op.outcome is Outcome.ALLOWED))
                self.decisions += 1
        self._replay(before=ops[-1].invoke)  # a later one's midpoint is no earlier

    def _replay(self, before: float) -> None:
        while self.waiting and self.waiting[0][0] < before:
            instant, _, allowed = heapq.heappop(self.waiting)
            self.log.decide(instant, allowed)

    def finish(self) -> dict[str, int]:
        self._replay(before=math.inf)
        allowed, rejected = self.log.wrongly
        return {
            "decisions": self.decisions,
            "wrongly_allowed": allowed,
            "wrongly_rejected": rejected,
        }
