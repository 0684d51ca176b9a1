"""``lua_window.py``'s correct limiter, reporting as ``now`` the real time of day read past every
clock function: the boot instant (``btime`` in ``/proc/stat``) plus the time since boot
(``/proc/uptime``). Files, not clock calls: no harness can move this clock, and its decisions
give it away."""

import json
import sys
from pathlib import Path

from lua_window import window_limiter  # type: ignore[import-not-found]  # beside this file


def real_now() -> float:
    booted = next(line for line in Path("/proc/stat").read_text().splitlines() if "btime" in line)
    return int(booted.split()[1]) + float(Path("/proc/uptime").read_text().split()[0])


allowed = window_limiter()
for line in sys.stdin:
    print(json.dumps({"allowed": allowed(line.strip()), "now": real_now()}), flush=True)
