"""Latency over time, as the clients measured it, with the nemesis's faults as bands: per rule,
the median and the 99th percentile of the requests answered in each bin (a hundredth of the run,
rounded), and the share of requests in the bin that got no decision (an error or no answer)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from ratelimit_harness.harness.history import Outcome, read_history
from ratelimit_harness.reports.figures import fault_bands, nice_width, save
from ratelimit_harness.reports.load import LoadRun


def plot(run: LoadRun, path: Path) -> Path | None:
    """None when no rule kept its clients' history."""
    histories = {}
    for rule in run.rules:
        kept = run.directory / "history" / f"{rule.name}.client.jsonl"
        ops = read_history(kept) if kept.exists() else []
        if ops:
            histories[rule.name] = ops
    if not histories:
        return None
    start = min(op.invoke for ops in histories.values() for op in ops)
    end = max(op.complete or op.invoke for ops in histories.values() for op in ops) - start
    width = nice_width(max(end, 1e-3) / 100)
    fig, (ax, errors) = plt.subplots(
        2, 1, figsize=(13, 5.6), sharex=True, gridspec_kw={"height_ratios": [3, 1]}
    )
    for name, ops in histories.items():
        answered: dict[int, list[float]] = defaultdict(list)
        undecided: dict[int, int] = defaultdict(int)
        sent: dict[int, int] = defaultdict(int)
        for op in ops:
            slot = int((op.invoke - start) / width)
            sent[slot] += 1
            if op.complete is not None:
                answered[slot].append((op.complete - op.invoke) * 1000)
            if op.outcome in (Outcome.UNKNOWN, Outcome.ERROR):
                undecided[slot] += 1
        slots = sorted(answered)
        xs = [(slot + 0.5) * width for slot in slots]
        for q, style in ((50, "-"), (99, ":")):
            ys = [float(np.percentile(answered[slot], q)) for slot in slots]
            ax.plot(xs, ys, ls=style, lw=1.4, label=f"{name} p{q}")
        shares = sorted(sent)
        errors.step(
            [(slot + 0.5) * width for slot in shares],
            [100 * undecided[slot] / sent[slot] for slot in shares],
            where="mid",
            lw=1.2,
            label=f"{name}",
        )
    for axes in (ax, errors):
        fault_bands(axes, run.record.faults, start, end)
        axes.grid(True, color="#eeeeee")
    ax.set_yscale("log")
    ax.set_ylabel("latency (ms, log scale)")
    ax.set_title(f"Latency over time, as the clients measured it ({run.directory.name})")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    errors.set_ylabel("undecided %")
    errors.set_ylim(0, 100)
    errors.set_xlabel(f"seconds since the first request (bins of {width:g} s)")
    errors.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    return save(fig, path)
