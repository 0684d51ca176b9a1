"""A measure of memory and speed taken in a fresh process of its own, so that one measure's
memory is not the next one's; and its line of a scale table (``check_scale``, ``judge_scale``).

The measuring script binds ``result`` (a dict with ``seconds`` and ``operations``); ``measured``
runs it with ``PEAK`` after it, which adds the process's own peak resident memory (``self``,
since its exec) and its largest worker's (``worker``), and prints it as JSON.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

PEAK = """
import json as _json, resource as _resource
_status = open("/proc/self/status").read().split("VmHWM:")[1].split()
result["self"] = int(_status[0]) * 1024
result["worker"] = _resource.getrusage(_resource.RUSAGE_CHILDREN).ru_maxrss * 1024
print(_json.dumps(result))
"""


def measured(script: str, *args: str) -> dict[str, Any]:
    """What ``script`` (run with ``args`` as ``sys.argv[1:]``) found; exits saying why if it
    failed."""
    done = subprocess.run(
        [sys.executable, "-c", script + PEAK, *args],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent)},
    )
    if done.returncode:
        raise SystemExit(f"{args[-1]} failed: {done.stderr.strip().splitlines()[-1:]}")
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


def header(what: str, rate: str) -> str:
    return f"{what:>12} {'how':7} {'seconds':>8} {rate:>10} {'self MB':>8} {'worker MB':>9}"


def scale_row(measure: str, what: str, how: str, found: dict[str, Any]) -> dict[str, Any]:
    """Print the table line of one measure (``found``: ``measured``'s) and return its row."""
    seconds, operations = float(found["seconds"]), int(found["operations"])
    self_mb, worker_mb = found["self"] / 2**20, found["worker"] / 2**20
    print(
        f"{operations:>12,} {how:7} {seconds:>8.1f} {operations / seconds:>10,.0f} "
        f"{self_mb:>8,.0f} {worker_mb:>9,.0f}",
        flush=True,
    )
    return {
        "measure": measure,
        "what": f"{operations:,} {what}",
        "value": operations / seconds,
        "unit": "/s",
        "note": f"peak {self_mb:,.0f} MB judging, {worker_mb:,.0f} MB a worker",
        "operations": operations,
        "peak_mb": max(self_mb, worker_mb),
    }
