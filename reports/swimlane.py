"""A race as a swim-lane diagram: a lane per instance and one for Redis, every step of the
trace a column in server order, labelled with the virtual time it happened at."""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.patches import FancyBboxPatch, Patch

from reports.figures import save
from reports.race import Step, Trace

_JUMP = re.compile(r"clock jumps ([+-][0-9.]+) s \(now ([+-]?[0-9.]+) s off\)")
_PASSES = re.compile(r"^time passes ([0-9.]+) s")
_DECISION = re.compile(r"^check\((.*)\) -> (\w+)$")
_COLOURS = {"allowed": "#8fd19e", "rejected": "#d9d9d9", "unknown": "#ffe08a"}


def plot(trace: Trace, path: Path) -> Path:
    steps = trace.steps
    named = {s.process for s in steps if s.process != "-"}
    instances = sorted(named | {f"app-{i}" for i in range(trace.instances)})
    lanes = {p: i + 1 for i, p in enumerate(reversed(instances))} | {"Redis": 0}
    times = _global_times(steps)
    start = min((t - _passed(s) for s, t in zip(steps, times, strict=True)), default=0.0)
    guilty = _guilty(trace, steps, times)

    fig, ax = plt.subplots(figsize=(max(8.0, 1.05 * len(steps) + 2), 1.3 * len(lanes) + 1.9))
    for step in steps:
        _draw(ax, step, lanes, len(lanes), guilty=step.number in guilty)

    ax.set_yticks(list(lanes.values()), list(lanes))
    ax.set_ylim(-0.7, len(lanes) - 0.3)
    ax.set_xticks(
        [s.number for s in steps],
        [f"{s.number}\n+{t - start:.2f}" for s, t in zip(steps, times, strict=True)],
        fontsize=7,
    )
    ax.set_xlim(0.4, max((s.number for s in steps), default=1) + 0.6)
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


def _draw(ax: Axes, step: Step, lanes: dict[str, int], top: int, *, guilty: bool) -> None:
    """One step: time passing spans every lane; a crash, a clock jump, a request starting and
    its decision sit on the instance's lane; a command on Redis' lane, linked to its sender."""
    x = step.number
    if step.process == "-":
        ax.axvspan(x - 0.45, x + 0.45, color="#cfe2ff", alpha=0.6, zorder=0)
        ax.text(
            x,
            top - 0.45,
            step.text.replace("time passes ", "+"),
            ha="center",
            va="top",
            fontsize=7,
            color="#1f4e99",
        )
        return
    lane = lanes[step.process]
    decision = _DECISION.match(step.text)
    if step.text == "crashes":
        ax.plot(x, lane, marker="X", markersize=16, color="#c62828", zorder=3)
        ax.text(x, lane - 0.35, "crash", ha="center", va="top", fontsize=7, color="#c62828")
    elif jump := _JUMP.search(step.text):
        ahead = float(jump[1]) >= 0
        ax.annotate(
            "",
            (x, lane + (0.3 if ahead else -0.3)),
            (x, lane - (0.3 if ahead else -0.3)),
            arrowprops={"arrowstyle": "-|>", "color": "#e67e00", "lw": 2},
        )
        ax.text(
            x,
            lane - 0.35,
            f"clock jumps {jump[1]} s",
            ha="center",
            va="top",
            fontsize=7,
            color="#e67e00",
        )
    elif decision:
        _box(
            ax,
            x,
            lane,
            f"{decision[1]}\n{decision[2]}",
            colour=_COLOURS.get(decision[2], "white"),
            guilty=guilty,
        )
    elif step.text.startswith("check("):
        _box(
            ax,
            x,
            lane,
            step.text.replace("(", "\n("),
            colour="white",
            guilty=False,
            dashed=True,
        )
    else:  # a command: its box on Redis' lane, a line from whoever sent it
        ax.plot([x, x], [lane, 0.28], color="#7a7a7a", lw=1.2, ls=":", zorder=1)
        colour = "#fde2e2" if guilty else "#fff4e6"
        _box(ax, x, 0, _command(step.text), colour=colour, guilty=guilty)


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


def _command(text: str) -> str:
    """``GET ratelimit:{user:1} -> nil`` as ``GET`` over ``-> nil``: the key is the same
    identity's throughout, and the full line is in the trace beside the plot."""
    command, _, reply = text.partition(" -> ")
    name = command.split()[0] if command else "?"
    reply = reply if len(reply) <= 12 else reply[:11] + "…"
    return f"{name}\n-> {reply}" if reply else name


def _passed(step: Step) -> float:
    """Seconds a "time passes" step moved every clock on by (its ``t`` is after it)."""
    passes = _PASSES.match(step.text)
    return float(passes[1]) if passes else 0.0


def _global_times(steps: list[Step]) -> list[float]:
    """Each line's ``t`` is its instance's clock: take its skew off, for the one virtual time."""
    offsets: dict[str, float] = {}
    times = []
    for step in steps:
        if jump := _JUMP.search(step.text):
            offsets[step.process] = float(jump[2])
        times.append(step.t - offsets.get(step.process, 0.0))
    return times


def _guilty(trace: Trace, steps: list[Step], times: list[float]) -> set[int]:
    """The steps the violation names: decisions matching a witness' operations (process,
    outcome, completion); for a key without a TTL, the last command on that key; else the
    last decision of the trace."""
    marked = set()
    for violation in trace.verdict.violations:
        for witness in violation.witnesses:
            for op in witness.operations:
                for step, t in zip(steps, times, strict=True):
                    d = _DECISION.match(step.text)
                    if (
                        d
                        and step.process == op.process
                        and d[2] == op.outcome
                        and op.complete is not None
                        and abs(t - op.complete) < 1e-3
                    ):
                        marked.add(step.number)
            if not witness.operations and witness.key:
                touched = [s.number for s in steps if witness.key in s.text]
                marked.update(touched[-1:])
    if not marked:
        decisions = [s.number for s in steps if _DECISION.match(s.text)]
        marked.update(decisions[-1:])
    return marked
