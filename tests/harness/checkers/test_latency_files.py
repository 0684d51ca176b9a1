"""A percentile found across sorted files, read a block at a time, is the one found in memory."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ratelimit_harness.harness.checkers.figures import latency_files
from ratelimit_harness.harness.checkers.figures.latency_files import LatencyFile
from ratelimit_harness.harness.checkers.figures.metrics import PERCENTILES, InMemory, nearest_rank


@pytest.mark.parametrize("sample_every", [1, 3, 4096])
def test_a_percentile_across_files_is_the_percentile_of_them_all(
    tmp_path: Path, sample_every: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(latency_files, "SAMPLE_EVERY", sample_every)
    rng = np.random.default_rng(1)
    runs = [np.sort(rng.exponential(0.002, size)) for size in (0, 1, 7, 1000, 10_000)]
    runs[3][:500] = 0.001  # ties, across a block's edge
    files = [LatencyFile.written(str(tmp_path / str(n)), run) for n, run in enumerate(runs)]
    everything = InMemory(np.sort(np.concatenate(runs)))
    total = len(everything)
    for percent in (*PERCENTILES, 0.01, 100):
        assert nearest_rank(files, total, percent) == nearest_rank([everything], total, percent)
    for value in (0.0, 0.001, float(runs[4][77]), 1.0):
        assert sum(f.at_most(value) for f in files) == everything.at_most(value)
    assert files[3].at(999) == runs[3][999]
