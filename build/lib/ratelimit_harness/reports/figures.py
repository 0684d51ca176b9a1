"""What every plot of the reports shares: matplotlib without a display, and how a figure is
written (its layout tightened, 110 dpi, then closed so a long run does not hold them all)."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ratelimit_harness.harness.history.loads import FaultRecord

DPI = 110
FAULT_COLOURS = ("#f4a261", "#e9c46a", "#a8dadc", "#cdb4db")  # one per fault name, in turn


def nice_width(seconds: float) -> float:
    """A bin width of 1, 2 or 5 times a power of ten, at least ``seconds``."""
    power = 10 ** math.floor(math.log10(seconds))
    return float(next(m * power for m in (1, 2, 5, 10) if m * power >= seconds))


def fault_bands(ax: Axes, faults: list[FaultRecord], origin: float, end: float) -> None:
    """Shade each fault's span on a time axis in seconds since ``origin`` (one colour and one
    legend entry per fault name); a fault that never ended runs to ``end``."""
    colours: dict[str, str] = {}
    for fault in faults:
        first = fault.fault not in colours
        colour = colours.setdefault(fault.fault, FAULT_COLOURS[len(colours) % len(FAULT_COLOURS)])
        stop = fault.end if fault.end is not None else origin + end
        ax.axvspan(
            fault.start - origin,
            stop - origin,
            color=colour,
            alpha=0.35,
            lw=0,
            label=f"fault: {fault.fault}" if first else None,
        )


def save(fig: Figure, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path
