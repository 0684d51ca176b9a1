"""A history as columns: one array per field, for checks that scan every operation at once.

Built once per check from the operations (a named tuple each: one column is one ``itemgetter``
over them, in C). Times stay the operations' own floats; ``complete`` and ``now`` hold NaN where
the operation has None. The split by key keeps file order within each key and the keys in the
order they first appear, as the checkers always have.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from operator import itemgetter

import numpy as np
import numpy.typing as npt

from ratelimit_harness.harness.history import Operation, Outcome

Floats = npt.NDArray[np.float64]
Indexes = npt.NDArray[np.intp]

OUTCOMES = tuple(Outcome)  # an operation's outcome code is its place here
_CODE = {outcome: code for code, outcome in enumerate(OUTCOMES)}
ALLOWED, REJECTED, UNKNOWN = (_CODE[Outcome(name)] for name in ("allowed", "rejected", "unknown"))
_PROCESS, _KEY, _INVOKE, _COMPLETE, _OUTCOME, _NOW = (itemgetter(i) for i in range(6))
_COST, _REFUND = itemgetter(7), itemgetter(8)


@dataclass(frozen=True)
class Columns:
    operations: Sequence[Operation]
    invoke: Floats
    complete: Floats  # NaN: never completed
    now: Floats  # NaN: the limiter did not say
    outcome: npt.NDArray[np.int8]  # codes into OUTCOMES
    key: npt.NDArray[np.int32]  # codes into key_names
    key_names: list[str]

    @classmethod
    def of(cls, operations: Sequence[Operation]) -> Columns:
        count = len(operations)
        keys = list(map(_KEY, operations))
        names = {key: code for code, key in enumerate(dict.fromkeys(keys))}
        return cls(
            operations,
            np.fromiter(map(_INVOKE, operations), np.float64, count),
            np.fromiter(map(_COMPLETE, operations), np.float64, count),  # None: NaN
            np.fromiter(map(_NOW, operations), np.float64, count),
            np.fromiter(map(_CODE.__getitem__, map(_OUTCOME, operations)), np.int8, count),
            np.fromiter(map(names.__getitem__, keys), np.int32, count),
            list(names),
        )

    @cached_property
    def cost(self) -> npt.NDArray[np.int64]:
        """Each operation's cost (``Operation.cost``)."""
        return np.fromiter(map(_COST, self.operations), np.int64, len(self.operations))

    @cached_property
    def refunded(self) -> bool:
        """Whether some request was given back (``Operation.refund``)."""
        return any(map(_REFUND, self.operations))

    @cached_property
    def given_back(self) -> Floats:
        """When each request's give-back completed (``Operation.refund``): NaN for one never
        given back, +inf for a give-back that never answered."""
        refunds = map(_REFUND, self.operations)
        return np.fromiter(
            (np.nan if r is None else np.inf if r[1] is None else r[1] for r in refunds),
            np.float64,
            len(self.operations),
        )

    @cached_property
    def end(self) -> Floats:
        """The latest instant each may have taken effect: ``complete``, or +inf."""
        return np.where(np.isnan(self.complete), np.inf, self.complete)

    @cached_property
    def decided_by(self) -> Floats:
        """``complete``, or ``invoke`` where there is none (``timeline.decided_by``)."""
        return np.where(np.isnan(self.complete), self.invoke, self.complete)

    def by_key(self) -> Iterator[tuple[str, Indexes]]:
        """Each key and the indexes of its operations, in file order."""
        order = np.argsort(self.key, kind="stable")
        bounds = np.cumsum(np.bincount(self.key, minlength=len(self.key_names)))
        first = 0
        for name, last in zip(self.key_names, bounds.tolist(), strict=True):
            yield name, order[first:last]
            first = last

    def picked(self, indexes: Indexes) -> list[Operation]:
        return [self.operations[i] for i in indexes.tolist()]
