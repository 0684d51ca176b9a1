"""Requests given back: an admitted request whose work failed downstream, say, returned to the
budget (``Operation.refund``). A limiter that honours the give-back no longer counts the request
once the give-back has taken effect, at some instant between its invoke and its completion.

Each is judged as an unknown request would be: over-admission never counts it, so what is found
is real whatever the give-back did. A rejection counts it too, but for the windows (fixed and
sliding windows, and the sliding counter): a rejection invoked after the give-back completed is
judged without it (``counting.Placeable``), so a limiter that ignores give-backs is caught.
Buckets, and windows started by admissions, count it for every rejection: refunds there can only
excuse, never accuse. Witnesses name the requests as they were recorded.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from operator import itemgetter

from ratelimit_harness.harness.history import Operation, Outcome
from ratelimit_harness.harness.history.verdict import Witness

_REFUND = itemgetter(8)  # Operation.refund


class StandIns:
    """The history as the checkers judge it, and the way back to the recorded operations."""

    def __init__(self, history: Sequence[Operation]) -> None:
        self.originals: dict[int, Operation] = {}
        self.history: Sequence[Operation] = history
        if any(map(_REFUND, history)):  # a give-back is a pair, never empty: in C
            self.history = [
                self._stand_in(op) if op.refund and op.outcome is Outcome.ALLOWED else op
                for op in history
            ]

    def _stand_in(self, op: Operation) -> Operation:
        stand_in = op._replace(outcome=Outcome.UNKNOWN)
        self.originals[id(stand_in)] = op
        return stand_in

    @property
    def given_back(self) -> int:
        """How many requests were given back."""
        return len(self.originals)

    def recorded(self, witnesses: Sequence[Witness]) -> list[Witness]:
        """``witnesses`` naming the operations as they were recorded."""
        if not self.originals:
            return list(witnesses)
        return [
            replace(w, operations=[self.originals.get(id(op), op) for op in w.operations])
            for w in witnesses
        ]
