"""A progress bar on stderr for the longer steps (the study's, judging a large history): redrawn
in place on a terminal (at most ten times a second), one line when the step ends anywhere else
(a CI log)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from types import TracebackType
from typing import TextIO

WIDTH = 30


class Progress:
    def __init__(self, label: str, total: int, out: TextIO | None = None) -> None:
        self.label, self.total, self.done = label, max(1, total), 0
        self.out = out or sys.stderr
        self.began = self.drawn = time.monotonic()

    def advance(self, n: int = 1) -> None:
        self.done = min(self.total, self.done + n)
        now = time.monotonic()
        if self.out.isatty() and (now - self.drawn >= 0.1 or self.done == self.total):
            self.drawn = now
            self._draw(now)

    def _draw(self, now: float) -> None:
        filled = WIDTH * self.done // self.total
        bar = "#" * filled + "-" * (WIDTH - filled)
        share = 100 * self.done / self.total
        line = f"{self.label} [{bar}] {share:3.0f}% {now - self.began:5.1f} s"
        print(f"\r{line:<78}", end="", file=self.out, flush=True)

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        seconds = time.monotonic() - self.began
        ending = "\r" if self.out.isatty() else ""
        line = f"{self.label}: {'done' if kind is None else 'stopped'} in {seconds:.1f} s"
        print(f"{ending}{line:<78}", file=self.out, flush=True)


def stages(out: TextIO | None = None) -> Callable[[str, int, int], None]:
    """A listener to a task of several stages, each told as ``(stage, done, of)``: a bar per
    stage, ended when its last step is done."""
    bars: dict[str, Progress] = {}

    def heard(stage: str, done: int, of: int) -> None:
        if stage not in bars:
            bars[stage] = Progress(stage, of, out).__enter__()
        bar = bars[stage]
        bar.advance(done - bar.done)
        if done >= of:
            bar.__exit__(None, None, None)

    return heard
