"""Clocks the explorer cannot move: found before a race where it can, and while it runs.

The explorer moves each instance's clock through the schedule (see instances.process): libfaketime
answers a program's calls to read the time, the time of day and the monotonic clocks alike. A
program that reads its clock another way keeps real time: a Go program does (Go's runtime reads
the clock through the vDSO, the kernel's page of time functions, and never calls libc). Its
verdicts are then right only if it never decides by its own clock.

So two checks:

- before the race, ``real_clock_runtime`` names a program's runtime that keeps real time (a Go
  binary, or ``go run``);
- while it runs, ``OffClock`` compares the ``now`` each decision reports with the schedule's
  time: one outside it, by more than ``TOLERANCE``, was read from a clock the explorer does not
  control. That decision's ``now`` is dropped from the history (a checker would place it weeks
  off), and the race says so.

Either stops the race with exit 2 unless the user allows a real clock (``--allow-real-clock``).
"""

from __future__ import annotations

import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

from ratelimit_harness.limiters.program import EXEC

# seconds a reported now may be off the schedule's time (a program may read its clock in seconds)
TOLERANCE = 1.0
GO_BUILD_INFO = b"\xff Go buildinf:"  # the magic of a Go binary's build information
SCANNED = 64 << 20  # bytes of a binary read to look for it, at most
WHY_GO = (
    "Go reads its clocks through the vDSO, not libc, so they keep real time while the schedule "
    "moves virtual time (the harness cannot move them)"
)


def real_clock_limiter(limiter: object) -> str:
    """Why the limiter named ``limiter`` keeps real time, if it is a program (``exec:COMMAND``)
    whose runtime does ("" if not, or it cannot tell)."""
    if isinstance(limiter, str) and limiter.startswith(EXEC):
        return real_clock_runtime(limiter.removeprefix(EXEC))
    return ""


def real_clock_runtime(command: str) -> str:
    """Why the program ``command`` starts keeps real time, if its runtime does ("" if not, or
    it cannot tell: a shell, a script)."""
    try:
        argv = shlex.split(command)
    except ValueError:
        return ""
    if not argv:
        return ""
    if Path(argv[0]).name == "go":
        return f"`go run` builds a Go program: {WHY_GO}"
    found = shutil.which(argv[0])
    if found and _is_go_binary(Path(found)):
        return f"{argv[0]} is a Go program: {WHY_GO}"
    return ""


def _is_go_binary(path: Path) -> bool:
    try:
        with path.open("rb") as binary:
            if binary.read(4) != b"\x7fELF":
                return False
            return GO_BUILD_INFO in binary.read(SCANNED)
    except OSError:
        return False


@dataclass
class OffClock:
    """The decisions whose ``now`` was off the schedule's time, in one run or over many."""

    count: int = 0
    first: str = ""  # the first, in words

    def check(self, who: str, now: float, earliest: float, latest: float) -> bool:
        """Whether ``who``'s reported ``now`` lies within ``earliest``..``latest`` (the
        schedule's times while its request ran, each as the true time and as its own skewed
        clock had it), give or take ``TOLERANCE``; one that does not is counted."""
        if earliest - TOLERANCE <= now <= latest + TOLERANCE:
            return True
        self.count += 1
        self.first = self.first or (
            f"{who} reported now={now:.3f}, while the schedule's time was "
            f"{earliest:.3f}..{latest:.3f} ({_apart(now, earliest, latest)})"
        )
        return False

    def add(self, other: OffClock) -> None:
        self.count += other.count
        self.first = self.first or other.first

    def said(self) -> str:
        """The count and the first, in one line."""
        plural = "s" * (self.count != 1)
        return (
            f"{self.count} decision{plural} reported a time the schedule did not show, so a "
            f"clock the explorer does not move; the first: {self.first}"
        )


def _apart(now: float, earliest: float, latest: float) -> str:
    seconds = now - latest if now > latest else now - earliest
    days = abs(seconds) / 86400
    size = f"{days:.1f} days" if days >= 1 else f"{abs(seconds):.3f} s"
    return f"{size} {'ahead' if seconds > 0 else 'behind'}"
