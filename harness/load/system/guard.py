"""The guard of a user's service: ``python -m ratelimit_harness.harness.load.system.guard
HARNESS_PID COMMAND...`` runs COMMAND as its child, in the guard's own process group, and outlives
the harness by no more than a moment.

The kernel kills a process whose parent dies only if it asked (PR_SET_PDEATHSIG), and only that
process: a service started as ``sh -c '...'``, or one that forks workers, would leave them serving
on their ports after a harness killed outright. The guard asks for SIGTERM when the harness dies,
and then kills its whole group (the service and every child it forked that stayed in the group).
A SIGTERM while the harness lives is the harness stopping the group, which the service got too:
the guard waits for it to exit and exits as it did (128 + N for a signal N, as a shell does).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from types import FrameType

from ratelimit_harness.harness.parent_death import die_with_parent


def guarded(command: list[str]) -> list[str]:
    """``command`` run under a guard whose parent is this process."""
    return [sys.executable, "-m", __name__, str(os.getpid()), *command]


def _kill_group_if_orphaned(harness: int) -> None:
    if os.getppid() != harness:
        os.killpg(os.getpgrp(), signal.SIGKILL)  # the guard with it


def main(argv: list[str]) -> int:
    harness, command = int(argv[0]), argv[1:]
    if os.getpgrp() != os.getpid():  # a group of its own, never the one it was started in
        os.setpgid(0, 0)

    def on_term(_signal: int, _frame: FrameType | None) -> None:
        _kill_group_if_orphaned(harness)

    signal.signal(signal.SIGTERM, on_term)
    die_with_parent(signal.SIGTERM)
    _kill_group_if_orphaned(harness)  # it died before we asked
    try:
        child = subprocess.Popen(command)
    except OSError as error:
        print(f"cannot start {command[0]!r}: {error.strerror}", file=sys.stderr)
        return 127
    code = child.wait()
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
