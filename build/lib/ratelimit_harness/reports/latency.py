"""Latency by percentile, the HdrHistogram way: the x axis is the percentile on a log scale of
nines (90 %, 99 %, 99.9 %, ...), the y axis the latency the clients measured, log scale."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from hdrh.histogram import HdrHistogram

from ratelimit_harness.reports.figures import save
from ratelimit_harness.reports.load import LoadRun


def plot(run: LoadRun, path: Path) -> Path | None:
    """None when no rule has a histogram (a run under another load generator)."""
    fig, ax = plt.subplots(figsize=(9, 4.8))
    nines = 1
    for rule in run.rules:
        encoded = run.latency_hdr(rule.name)
        if not encoded:
            continue
        histogram = HdrHistogram.decode(encoded)
        count = int(histogram.get_total_count())
        if not count:
            continue
        nines = max(nines, int(np.ceil(np.log10(count))))
        xs = np.logspace(0, np.log10(count), 200)  # 1 / (1 - percentile)
        ys = [histogram.get_value_at_percentile(100 * (1 - 1 / x)) / 1000 for x in xs]
        ax.plot(xs, ys, lw=1.8, label=f"{rule.name} ({rule.limiter}, {count:,} requests)")
    if not ax.lines:
        plt.close(fig)
        return None
    ticks = sorted([2.0] + [10.0**k for k in range(nines + 1)])  # 2: the median
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(ticks, [_percentile(t) for t in ticks])
    ax.minorticks_off()
    ax.set_xlabel("percentile (log scale of nines)")
    ax.set_ylabel("latency (ms, log scale)")
    ax.set_title(f"Latency by percentile, as the clients measured it ({run.directory.name})")
    ax.grid(True, which="major", color="#dddddd")
    ax.legend(loc="upper left", fontsize=8)
    return save(fig, path)


def _percentile(x: float) -> str:
    return f"{100 * (1 - 1 / x):.{max(0, round(np.log10(x)) - 2)}f}%"
