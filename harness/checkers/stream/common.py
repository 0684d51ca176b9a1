"""What the checkers that judge one identity as a stream share: the answer that the identity
must be judged whole instead, the shape of what a stream found, and instants kept in order
that are let go of once no later question can ask about them.

A *stream* takes one identity's operations a batch at a time, in order of invoke, and keeps only
what a later operation can still change (``identity``). Each kind keeps its count and its
first ``MAX_WITNESSES`` witnesses (the verdict lists no more).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ratelimit_harness.harness.checkers.view.columns import Floats
from ratelimit_harness.harness.history.verdict import Witness

FORGET_AT = 1024  # instants let go of at once, at the least

Found = dict[str, tuple[int, list[Witness]]]  # kind -> count, first witnesses


class NotStreamable(Exception):
    """The identity must be judged whole; the message says why."""


class Instants:
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

    def between(self, first: float, last: float) -> list[float]:
        """Those in (first, last] (all kept, ``first`` being no earlier than any let go of)."""
        kept = self.kept
        after = np.searchsorted(kept, first, "right")
        between: list[float] = kept[after : np.searchsorted(kept, last, "right")].tolist()
        return between

    def forget(self, low: float) -> None:
        """Let go of those before ``low``, once there are ``FORGET_AT`` of them and they are
        most of those kept: no later question asks about an instant before it."""
        past = int(np.searchsorted(self.kept, low, "left"))
        if past > FORGET_AT and past * 2 > len(self.kept):
            self.kept = self.kept[past:].copy()
            self.gone += past
