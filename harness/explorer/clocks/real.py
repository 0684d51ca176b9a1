"""Clocks the explorer cannot move: found before a race where it can, and while it runs.

The explorer moves each instance's clock through the schedule. An instance in the explorer's
process reads it through Python's clock functions, patched (``virtual``); a program reads it
through its vDSO, replaced (``process_clock``): the time of day and the monotonic clocks, in
every runtime. Where a program's clock cannot be controlled here (ptrace refused, as in some
containers; an architecture not covered), its verdicts would be right only if it never decided
by its own clock.

So two checks:

- before the race, ``uncontrolled`` says why a program's clock cannot be controlled here;
- while it runs, ``OffClock`` compares the ``now`` each decision reports with the schedule's
  time: one outside it, by more than ``TOLERANCE``, was read from a clock the explorer does not
  control. That decision's ``now`` is dropped from the history (a checker would place it weeks
  off), and the race says so.

The first stops the race with exit 3, the second with exit 2, unless the user allows a real
clock (``--allow-real-clock``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ratelimit_harness.harness.process_clock import probe
from ratelimit_harness.limiters.program import EXEC

# seconds a reported now may be off the schedule's time (a program may read its clock in seconds)
TOLERANCE = 1.0


def uncontrolled(limiter: object) -> str:
    """Why the clock of the limiter named ``limiter`` cannot be controlled here, if it is a
    program (``exec:COMMAND``) and it cannot ("" if it can, or the limiter is not a program)."""
    if isinstance(limiter, str) and limiter.startswith(EXEC):
        return probe()
    return ""


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
