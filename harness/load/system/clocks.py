"""The app instances' own clocks, for a load run whose nemesis skews them: each instance under
libfaketime, following a file of its own that holds its offset from real time (``+0`` until a
fault moves it), re-read at every reading (``FAKETIME_NO_CACHE``; monotonic clocks stay real, so
timers run). Whatever an instance reads the time of day with through libc (Python's
``time.time()``, Node's ``Date.now()``) then reads its own clock; Part 7's limiters that take
``now`` from the app's clock show their flaw under load.

An instance's journals must stay on the run's one clock all the same: ``true_clock`` is real time
read without libfaketime's offset (the epoch the instance saw as it started, before any skew, plus
its monotonic clock).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path

from ratelimit_harness.harness.load.contract.env import ENV
from ratelimit_harness.harness.provision.base import Unavailable

CLOCK_FILE = f"{ENV}CLOCK_FILE"  # set in an instance's environment when it runs on its own clock
# where Debian's libfaketime package puts the library, if the wheel is not installed
SYSTEM_LIBRARY = Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1")


def library() -> Path:
    """The libfaketime shared object: the ``libfaketime`` wheel's, else Debian's."""
    try:
        import libfaketime
    except ImportError:
        pass
    else:
        found = sorted(Path(libfaketime.__file__).parent.glob("vendor/**/libfaketime.so.1"))
        if found:
            return found[0]
    if SYSTEM_LIBRARY.exists():
        return SYSTEM_LIBRARY
    raise Unavailable("libfaketime not found (pip install libfaketime, or apt libfaketime)")


def on_offset_file(path: Path) -> dict[str, str]:
    """What puts a process on the offset in ``path`` (libfaketime's ``+S`` format), as its
    environment's additions; its monotonic clocks stay real, so its timers run."""
    return {
        "LD_PRELOAD": str(library()),
        "FAKETIME_TIMESTAMP_FILE": str(path),
        "FAKETIME_NO_CACHE": "1",
        "DONT_FAKE_MONOTONIC": "1",
        "TZ": "UTC",
    }


class InstanceClocks:
    """The offset files of a run's instances, in ``RUN_DIR/clocks/``."""

    def __init__(self, run_dir: Path) -> None:
        self.folder = run_dir / "clocks"
        self.folder.mkdir(parents=True, exist_ok=True)

    def env_for(self, name: str) -> dict[str, str]:
        """What puts instance ``name`` on its own clock (at real time until ``set``)."""
        path = self.folder / f"{name}.offset"
        if not path.exists():
            path.write_text("+0\n")
        return on_offset_file(path) | {CLOCK_FILE: str(path)}

    def set(self, name: str, offset: float) -> None:
        """Instance ``name``'s clock is ``offset`` seconds from real time from now on."""
        path = self.folder / f"{name}.offset"
        partial = path.with_suffix(".partial")
        partial.write_text(f"{offset:+.6f}\n")
        partial.replace(path)  # whole: a reading never sees half a line


def true_clock(
    wall: Callable[[], float] = time.time,
    monotonic: Callable[[], float] = time.monotonic,
    readings: int = 64,
) -> Callable[[], float]:
    """Real time, as this process saw it when this was called (its ``wall`` clock at real time
    then): the epoch of its ``monotonic`` clock, from the reading of the time of day that two
    monotonic readings bracket most tightly, of ``readings`` tries. One reading alone is off by
    however long the process was held between it and the monotonic one: a thread descheduled, or
    libfaketime's reading of its file, put an instance's journals 4 ms behind real time on a
    loaded machine, which a token bucket refilled at 2.5/s reads as a hundredth of a token."""
    spread, epoch = math.inf, 0.0
    for _ in range(readings):
        before = monotonic()
        now = wall()
        after = monotonic()
        if after - before < spread:
            spread, epoch = after - before, now - (before + after) / 2
    return lambda: epoch + monotonic()
