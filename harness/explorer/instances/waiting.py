"""Whether a program is waiting: each of its processes blocked for input, a timer or a child.

Linux says where each thread sleeps in ``/proc/PID/task/TID/wchan``: the kernel function it
waits in. A program at rest on its event loop (Node's libuv), or reading its stdin (Python),
waits in one of ``WAITS``; a program still booting is running, or waits on a file, a lock or
a page. A program's processes are its process group (programs start in a session of their
own), so a wrapper (``sh -c``, ``npx``) counts as waiting while it waits for its child.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

PROC = Path("/proc")
# kernel functions a thread waits in for input, a timer or a child (names differ by kernel)
WAITS = frozenset(
    {
        *("do_epoll_wait", "ep_poll", "do_select", "do_sys_poll", "poll_schedule_timeout"),
        *("pipe_read", "anon_pipe_read", "wait_woken", "unix_stream_read_generic"),
        *("do_wait", "kernel_wait4", "hrtimer_nanosleep", "do_nanosleep"),
    }
)
POLL = 0.005  # seconds between two looks
STEADY = 2  # looks in a row that must agree: one may fall between two steps of the program


def waiting(group: int) -> bool:
    """Whether every process of process group ``group`` has its main thread waiting (see
    ``WAITS``); False if none is left, or Linux does not say."""
    found = False
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if os.getpgid(int(entry.name)) != group:
                continue
            where = (entry / "wchan").read_text().strip()
        except (OSError, ProcessLookupError):
            continue  # gone meanwhile, or not ours to read
        if where not in WAITS:
            return False
        found = True
    return found


def wait_until_waiting(
    group: int,
    timeout: float,
    alive: Callable[[], bool] = lambda: True,
    quiet: Callable[[], bool] = lambda: True,
) -> bool:
    """Wait, up to ``timeout`` seconds and while ``alive()``, until ``group`` is waiting and
    ``quiet()`` (nothing of it on its way elsewhere) at ``STEADY`` looks in a row: whether it
    was (a process that ended is not waiting, and never will be)."""
    deadline = time.monotonic() + timeout
    steady = 0
    while steady < STEADY:
        steady = steady + 1 if waiting(group) and quiet() else 0
        if steady == STEADY:
            break
        if time.monotonic() >= deadline or not alive():
            return False
        time.sleep(POLL)
    return True
