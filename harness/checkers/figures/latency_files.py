"""Latencies on disk, sorted, read a block at a time: how a percentile is found across the
parts of a history too large to hold (``metrics.nearest_rank``) without holding the latencies,
or mapping them (the pages a search touches would count as the judge's own).

Each file is the raw float64 values; beside it, in memory, every ``SAMPLE_EVERY``-th value, so
that a count reads one block of the file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from ratelimit_harness.harness.checkers.view.columns import Floats

SAMPLE_EVERY = 4096  # values a block: 32 KB read to count


@dataclass(frozen=True)
class LatencyFile:
    """Sorted latencies in the file ``path`` (``metrics.Sorted``)."""

    path: str
    size: int
    samples: Floats  # every SAMPLE_EVERY-th value, from the first

    @classmethod
    def written(cls, path: str, ordered: Floats) -> LatencyFile:
        """``ordered`` (sorted) written to ``path``."""
        ordered.astype(np.float64).tofile(path)
        return cls(path, len(ordered), ordered[::SAMPLE_EVERY].copy())

    def __len__(self) -> int:
        return self.size

    def at(self, index: int) -> float:
        return float(self._read(index, 1)[0])

    def at_most(self, value: float) -> int:
        block = int(np.searchsorted(self.samples, value, "right")) - 1
        if block < 0:
            return 0
        first = block * SAMPLE_EVERY
        values = self._read(first, min(SAMPLE_EVERY, self.size - first))
        return first + int(np.searchsorted(values, value, "right"))

    def _read(self, first: int, count: int) -> Floats:
        item = np.dtype(np.float64).itemsize
        with open(self.path, "rb") as file:
            data = os.pread(file.fileno(), count * item, first * item)
        return np.frombuffer(data, np.float64)
