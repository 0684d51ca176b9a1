"""Admitted requests over time against what the policy allows, for one rule of a load run.

The policy holds per identity, so the plot follows one: the key of the first over-admission
witness, else the key admitted most. Bars are its admissions per bin (a twentieth of the
window; a hundredth of the run, rounded, when that is shorter); the line is what counts against
the policy at each instant (the admissions in the current aligned window for a fixed window, in
the trailing span otherwise), beside the allowance. A boundary attack shows as bars either side
of a window edge and the line above the limit.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from ratelimit_harness.harness.history import Operation
from ratelimit_harness.harness.history.loads import RuleRecord
from ratelimit_harness.reports.figures import fault_bands, nice_width, save
from ratelimit_harness.reports.load import LoadRun
from ratelimit_harness.reports.policy import allowance


def plot(run: LoadRun, rule: RuleRecord, path: Path) -> Path | None:
    """None when the rule admitted nothing or its policy is not one this knows."""
    allows = allowance(rule.judged_by)
    admitted = [op for op in run.history(rule.name) if op.outcome == "allowed"]
    if allows is None or not admitted:
        return None
    key = _focus(rule, admitted)
    times = sorted(_instant(op) for op in admitted if op.key == key)
    start = min(_instant(op) for op in admitted)
    end = max(_instant(op) for op in admitted)
    width = min(allows.span / 20, nice_width(max(end - start, 1e-3) / 100))
    edges = _edges(rule.policy) or _edges(rule.judged_by)
    if edges and edges <= end - start:
        start -= start % edges  # the plot begins at an edge of the enforced window
    bins = max(1, int((end - start) / width) + 1)
    counts = Counter(int((t - start) / width) for t in times)

    fig, ax = plt.subplots(figsize=(13, 4.2))
    ax.bar(
        [(i + 0.5) * width for i in range(bins)],
        [counts.get(i, 0) for i in range(bins)],
        width=width * 0.9,
        color="#4c8bd6",
        label=f"admitted per {width:g} s bin",
    )
    xs, ys = _counted(times, start, end, allows.span, allows.aligned)
    span = "aligned window" if allows.aligned else f"last {allows.span:g} s"
    ax.step(xs, ys, where="post", color="#c62828", lw=1.5, label=f"admitted in the {span}")
    ax.axhline(
        allows.most,
        color="black",
        ls="--",
        lw=1.2,
        label=f"allowance: {allows.most:g} per {allows.span:g} s",
    )
    shown = edges is not None and (end - start) / 100 <= edges <= end - start
    if edges is not None and shown:
        for k in range(int((end - start) / edges) + 2):
            ax.axvline(k * edges, color="#999999", lw=0.6, ls=":")
    fault_bands(ax, run.record.faults, start, end - start + width)
    ax.set_xlim(0, end - start + width)
    dotted = " (edges of the enforced window dotted)" if shown else ""
    ax.set_xlabel(f"seconds since {_clock(start)}{dotted}")
    ax.set_ylabel("admitted requests")
    ax.set_title(
        f"{rule.name}: admissions of {key} under {rule.limiter}, judged by "
        f"{rule.judged_by}\n({_identities(len({op.key for op in admitted}))}; "
        f"{rule.count('over-admission')} over-admissions in the run)",
        fontsize=10,
    )
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    return save(fig, path)


def _identities(n: int) -> str:
    return "its only identity" if n == 1 else f"one of {n} identities"


def _clock(t: float) -> str:
    return time.strftime("%H:%M:%S", time.gmtime(t)) + f"{t % 1:.3f}".lstrip("0") + " UTC"


def _edges(spec: str) -> float | None:
    """The window of a policy counted in aligned windows, whose edges a boundary attack uses."""
    allows = allowance(spec)
    return allows.span if allows and allows.aligned else None


def _focus(rule: RuleRecord, admitted: list[Operation]) -> str:
    for violation in rule.server.of_kind("over-admission") + rule.client.of_kind("over-admission"):
        if violation.witnesses:
            return violation.witnesses[0].key
    return Counter(op.key for op in admitted).most_common(1)[0][0]


def _instant(op: Operation) -> float:
    """When the decision was made: it completed then at the latest."""
    return op.complete if op.complete is not None else op.invoke


def _counted(
    times: list[float], start: float, end: float, span: float, aligned: bool
) -> tuple[list[float], list[int]]:
    """What counts against the policy, as a step function of time (relative to ``start``)."""
    events = [(t, 1) for t in times]
    if aligned:
        first = start - start % span
        events += [(first + k * span, 0) for k in range(int((end - first) / span) + 2)]
    else:
        events += [(t + span, -1) for t in times]
    xs, ys, level = [0.0], [0], 0
    window = int(start // span)
    for t, change in sorted(events):
        if aligned:
            w = int(t // span)
            if w != window:
                window, level = w, 0
        level += change
        xs.append(t - start)
        ys.append(level)
    return xs, ys
