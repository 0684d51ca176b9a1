"""A child process that must not outlive its parent: the kernel signals it when the parent dies
(PR_SET_PDEATHSIG), even a parent killed outright, which runs no clean-up of its own. Light to
import: a process's first step."""

from __future__ import annotations

import ctypes
import signal
import sys

PR_SET_PDEATHSIG = 1


def die_with_parent(sig: int = signal.SIGKILL) -> None:
    """Have the kernel send ``sig`` to this process when its parent dies (a child before exec:
    ``preexec_fn=die_with_parent``)."""
    if sys.platform == "linux":
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, sig)
