"""Time below libc: a program's clocks read instants the harness writes, whatever its language.

A *clock file* (``clock_file``) holds two instants: the time of day and the monotonic clocks'.
``ProcessClock.spawn`` starts a program whose every process reads them (``tracer``): the vDSO's
clock functions are replaced (``vdso``), and the system calls that ask the kernel for the time,
or wait until an instant, are answered or rewritten (``seccomp_filter``). No preload, no
compiler: Go, the JVM, Node, Python, Rust and C programs alike.

x86-64 Linux only, and the harness must be allowed to ptrace its children: ``probe`` says why
not where it is not.

May import: nothing of the harness.
"""

from __future__ import annotations

import functools
import platform
import subprocess
import sys

from ratelimit_harness.harness.process_clock.clock_file import NANOS, REAL, ClockFile
from ratelimit_harness.harness.process_clock.tracer import ProcessClock

__all__ = ["NANOS", "REAL", "ClockFile", "ProcessClock", "probe"]

PROBED = 1_234_567_890_123_456_000  # the instant the probe's program must read


@functools.cache
def probe() -> str:
    """Why a program's clock cannot be controlled here ("" if it can): tried once, on a small
    Python program that prints the time it reads."""
    if sys.platform != "linux" or platform.machine() != "x86_64":
        here = f"{sys.platform} {platform.machine()}"
        return f"the harness moves clocks on x86-64 Linux only, not on {here}"
    clock = ClockFile.create(name="probe")
    try:
        clock.set(PROBED, PROBED)
        tracer = ProcessClock(clock)
        command = [sys.executable, "-S", "-c", "import time; print(time.time_ns())"]
        try:
            process = tracer.spawn(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            out, err = process.communicate(timeout=30)
        except (OSError, subprocess.SubprocessError) as error:
            return f"a program could not be started on a clock of the harness's: {error}"
        said = out.decode(errors="replace").strip()
        if tracer.refused or process.returncode != 0:
            why = tracer.refused or err.decode(errors="replace").strip().splitlines()[-1:]
            return f"ptrace or seccomp is not allowed here ({why}); a container may forbid them"
        if said != str(PROBED):
            return f"a program on the harness's clock read {said}, not the instant written"
        return ""
    finally:
        clock.path.unlink(missing_ok=True)
        if clock.path.parent.name.startswith("rlh-clock-"):
            clock.path.parent.rmdir()
