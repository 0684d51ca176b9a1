"""What every plot of the reports shares: matplotlib without a display, and how a figure is
written (its layout tightened, 110 dpi, then closed so a long run does not hold them all)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.figure import Figure

DPI = 110


def save(fig: Figure, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path
