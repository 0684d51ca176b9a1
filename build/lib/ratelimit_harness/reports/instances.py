"""Violations against the number of app instances, over several load runs (one limiter each,
or several: one line per limiter and kind). A limiter that keeps its count in each instance
(Part 7's in-memory) over-admits more with every instance; a correct one stays at zero."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from ratelimit_harness.reports.figures import save
from ratelimit_harness.reports.load import LoadRun


def plot(runs: list[LoadRun], path: Path) -> Path:
    points: dict[tuple[str, str], dict[int, list[int]]] = defaultdict(lambda: defaultdict(list))
    for run in runs:
        for rule in run.rules:
            for kind in rule.checks:
                points[(f"{rule.name}: {rule.limiter}", kind)][run.instances].append(
                    rule.server.count(kind)
                )
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for (label, kind), by_count in sorted(points.items()):
        if not any(any(v) for v in by_count.values()) and kind != "over-admission":
            continue  # a kind never seen is one flat line at zero: over-admission shows that
        xs = sorted(by_count)
        ys = [sum(by_count[x]) / len(by_count[x]) for x in xs]
        ax.plot(xs, ys, marker="o", label=f"{label}, {kind}")
    ax.set_xlabel("app instances")
    ax.set_ylabel("violations per run (mean over runs)")
    ax.set_xticks(sorted({run.instances for run in runs}))
    ax.set_title(f"Violations against instances ({len(runs)} load runs)")
    ax.grid(True, color="#eeeeee")
    ax.legend(fontsize=8)
    return save(fig, path)
