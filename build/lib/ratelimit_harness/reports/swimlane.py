"""A race as a swim-lane diagram: a lane per instance and one for Redis, every step of the
trace a column in server order, labelled with the virtual time it happened at."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.patches import FancyBboxPatch, Patch

from ratelimit_harness.harness.history.races import (
    CRASH,
    DECISION,
    NOBODY,
    REQUEST,
    SKEW,
    TIME,
    Step,
)
from ratelimit_harness.reports.figures import save
from ratelimit_harness.reports.race import Race

_COLOURS = {"allowed": "#8fd19e", "rejected": "#d9d9d9", "unknown": "#ffe08a"}


def plot(race: Race, path: Path) -> Path:
    trace = race.saved
    steps = trace.steps
    named = {s.lane for s in steps if s.lane != NOBODY}
    instances = sorted(named | {f"app-{i}" for i in range(trace.instances)})
    lanes = {p: i + 1 for i, p in enumerate(reversed(instances))} | {"Redis": 0}
    start = min((s.at - (s.seconds if s.kind == TIME else 0.0) for s in steps), default=0.0)
    guilty = guilty_steps(race)
    numbers = range(1, len(steps) + 1)

    fig, ax = plt.subplots(figsize=(max(8.0, 1.05 * len(steps) + 2), 1.3 * len(lanes) + 1.9))
    for number, step in zip(numbers, steps, strict=True):
        _draw(ax, number, step, lanes, len(lanes), guilty=number in guilty)

    ax.set_yticks(list(lanes.values()), list(lanes))
    ax.set_ylim(-0.7, len(lanes) - 0.3)
    ax.set_xticks(
        list(numbers),
        [f"{n}\n+{s.at - start:.2f}" for n, s in zip(numbers, steps, strict=True)],
        fontsize=7,
    )
    ax.set_xlim(0.4, len(steps) + 0.6)
    ax.set_xlabel("step in server order / virtual time since the start (s)")
    ax.set_ylabel("lane")
    ax.set_title(
        f"{trace.limiter}: {', '.join(trace.violations) or 'no violation'} "
        f"\n{trace.instances} instances, judged by {trace.judged_by}",
        fontsize=10,
    )
    ax.legend(
        handles=[
            Patch(facecolor=_COLOURS["allowed"], edgecolor="black", label="decision: allowed"),
            Patch(facecolor=_COLOURS["rejected"], edgecolor="black", label="decision: rejected"),
            Patch(facecolor="white", edgecolor="#c62828", lw=2.5, label="in the violation"),
            Patch(facecolor="#fff4e6", edgecolor="black", label="Redis command -> reply"),
            Patch(facecolor="#cfe2ff", label="time passes"),
        ],
        loc="upper center",
        bbox_to_anchor=(0.5, -0.2),
        ncol=5,
        fontsize=7,
        frameon=False,
    )
    ax.grid(axis="x", color="#eeeeee", zorder=0)
    return save(fig, path)


def _draw(ax: Axes, x: int, step: Step, lanes: dict[str, int], top: int, *, guilty: bool) -> None:
    """One step: time passing spans every lane; a crash, a clock jump, a request starting and
    its decision sit on the instance's lane; a command on Redis' lane, linked to its sender."""
    if step.kind == TIME:
        ax.axvspan(x - 0.45, x + 0.45, color="#cfe2ff", alpha=0.6, zorder=0)
        ax.text(
            x,
            top - 0.45,
            f"+{step.seconds:g} s",
            ha="center",
            va="top",
            fontsize=7,
            color="#1f4e99",
        )
        return
    lane = lanes[step.lane]
    if step.kind == CRASH:
        ax.plot(x, lane, marker="X", markersize=16, color="#c62828", zorder=3)
        ax.text(x, lane - 0.35, "crash", ha="center", va="top", fontsize=7, color="#c62828")
    elif step.kind == SKEW:
        ahead = step.seconds >= 0
        ax.annotate(
            "",
            (x, lane + (0.3 if ahead else -0.3)),
            (x, lane - (0.3 if ahead else -0.3)),
            arrowprops={"arrowstyle": "-|>", "color": "#e67e00", "lw": 2},
        )
        ax.text(
            x,
            lane - 0.35,
            f"clock jumps {step.seconds:+g} s",
            ha="center",
            va="top",
            fontsize=7,
            color="#e67e00",
        )
    elif step.kind == DECISION:
        _box(
            ax,
            x,
            lane,
            f"{step.identity}\n{step.reply}",
            colour=_COLOURS.get(step.reply, "white"),
            guilty=guilty,
        )
    elif step.kind == REQUEST:
        _box(
            ax,
            x,
            lane,
            f"check\n({step.identity})",
            colour="white",
            guilty=False,
            dashed=True,
        )
    else:  # a command: its box on Redis' lane, a line from whoever sent it
        ax.plot([x, x], [lane, 0.28], color="#7a7a7a", lw=1.2, ls=":", zorder=1)
        colour = "#fde2e2" if guilty else "#fff4e6"
        _box(ax, x, 0, _command(step), colour=colour, guilty=guilty)


def _box(
    ax: Axes, x: float, y: float, text: str, *, colour: str, guilty: bool, dashed: bool = False
) -> None:
    ax.add_patch(
        FancyBboxPatch(
            (x - 0.42, y - 0.28),
            0.84,
            0.56,
            boxstyle="round,pad=0.02",
            facecolor=colour,
            edgecolor="#c62828" if guilty else "#444444",
            lw=2.5 if guilty else 0.8,
            ls="--" if dashed else "-",
            zorder=2,
        )
    )
    ax.text(
        x,
        y,
        text,
        ha="center",
        va="center",
        fontsize=6.5,
        zorder=3,
        fontweight="bold" if guilty else "normal",
    )


def _command(step: Step) -> str:
    """``GET ratelimit:{user:1}`` answered ``nil`` as ``GET`` over ``-> nil``: the key is the
    same identity's throughout, and the full line is in the trace beside the plot."""
    name = step.what.split()[0] if step.what else "?"
    reply = step.reply if len(step.reply) <= 12 else step.reply[:11] + "…"
    return f"{name}\n-> {reply}" if reply else name


def guilty_steps(race: Race) -> set[int]:
    """The steps (numbered from 1) the violation names: decisions matching a witness'
    operations (process, outcome, completion); for a key without a TTL, the last command on
    that key; else the last decision of the trace."""
    steps, marked = race.saved.steps, set[int]()
    numbered = list(enumerate(steps, 1))
    decisions = [(n, s) for n, s in numbered if s.kind == DECISION]
    for violation in race.saved.verdict.violations:
        for witness in violation.witnesses:
            for op in witness.operations:
                marked.update(
                    n
                    for n, s in decisions
                    if s.lane == op.process
                    and s.reply == op.outcome
                    and op.complete is not None
                    and abs(s.at - op.complete) < 1e-3
                )
            if not witness.operations and witness.key:
                touched = [n for n, s in numbered if witness.key in s.keys]
                marked.update(touched[-1:])
    if not marked:
        marked.update(n for n, _ in decisions[-1:])
    return marked
