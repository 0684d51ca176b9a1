"""A token bucket's wrongful rejections judged as a stream (``rejections``), as
``token_bucket.wrongful_rejections`` judges them all at once.

There, a rejection at t is wrongful when P(t) - rate * t + max over s <= t of (rate * s - Q(s))
is at most capacity - 1, with P(t) the operations invoked by t and Q(s) those completed before
s (admitted and unknown ones). The maximum looks back to the identity's first operation, but it
only grows, so the stream keeps it as it goes: for each completion, once no later operation can
complete before it, the running maximum of rate * (its instant) - (the completions before it),
the *peak*. Of what lies before the earliest rejection still to judge, it keeps only counts and
the last peak. Times are taken from the identity's first invoke, as the checker takes them, so
that every figure is the same float.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ratelimit_harness.harness.checkers.stream.rejections import Placed, Right
from ratelimit_harness.harness.checkers.view.columns import Floats
from ratelimit_harness.harness.checkers.view.timeline import decided_by
from ratelimit_harness.harness.history import Operation


class BucketRoom(Placed):
    """A bucket of ``capacity`` tokens refilled at ``rate`` a second (a ``Room``), its times
    from ``origin``, the identity's first invoke."""

    unit = "tokens"
    whole = True  # one more admission takes a whole token

    def __init__(self, capacity: int, rate: float, origin: float) -> None:
        super().__init__(zero=origin)
        self.budget, self.rate = capacity, rate
        self.peaks: Floats = np.empty(0)  # of the first ends kept, those no longer to move
        self.peak_gone = -math.inf  # the peak of the last end let go of

    def add(self, placed: Sequence[Operation], latest: float) -> None:
        super().add(placed, latest)
        # later operations are invoked at latest or after, and complete no earlier: the ends up
        # to it keep their places, and their peaks can be reckoned
        kept = self.ends.kept
        final = int(self.ends.at_most(latest - self.zero)) - self.ends.gone
        if final > len(self.peaks):
            new = kept[len(self.peaks) : final]
            rises = self.rate * new - (self.ends.gone + np.searchsorted(kept, new, "left"))
            before = self.peaks[-1:] if len(self.peaks) else [self.peak_gone]
            peaks = np.maximum.accumulate(np.concatenate((before, rises)))[1:]
            self.peaks = np.concatenate((self.peaks, peaks))

    def forget(self, earliest: float, latest: float) -> None:
        low = earliest - self.zero  # no rejection left to judge was invoked before it
        self.starts.forget(low)
        gone = self.ends.gone
        self.ends.forget(low)
        if self.ends.gone > gone:
            self.peak_gone = float(self.peaks[self.ends.gone - gone - 1])
            self.peaks = self.peaks[self.ends.gone - gone :]

    def _peak(self, completed: Floats) -> Floats:
        """The peak of each ``completed``-th end (counted from 1), -inf for none."""
        completed = np.asarray(completed)
        position = np.clip(completed - self.ends.gone, 0, None)  # 0: the last let go of
        peaks = np.concatenate(([self.peak_gone], self.peaks))
        found: Floats = np.where(completed > 0, peaks[position], -math.inf)
        return found

    def at_invoke(self, invokes: Floats, lasts: Floats) -> Floats:
        t = invokes - self.zero
        since = self.rate * t - self.ends.before(t)
        since = np.maximum(since, self._peak(self.ends.at_most(t)))
        used: Floats = self.starts.at_most(t) - self.rate * t + since
        return used

    def most_used(self, op: Operation, right: Right) -> float:
        first, last = op.invoke - self.zero, decided_by(op) - self.zero
        rate = self.rate
        most = -math.inf
        for t in [first, *self.starts.between(first, last)]:
            since = rate * t - int(self.ends.before(t))
            completed = int(self.ends.at_most(t))
            if completed:
                since = max(since, float(self._peak(np.array([completed]))[0]))
            most = max(most, int(self.starts.at_most(t)) - rate * t + since)
            if right(most):
                break
        return most
