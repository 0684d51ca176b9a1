"""The harness's own errors: bad input or an unusable environment, each said in one line."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path


class HarnessError(Exception):
    """What the CLI prints as ``error: <message>``, with exit code 2 (bad input) unless it is an
    EnvironmentFailure. Anything else reaching the CLI is a bug of the harness and keeps its
    traceback."""


class EnvironmentFailure(HarnessError):
    """Not the input but the machine failed: a process the harness needs died or stopped
    answering. Exit code 3."""


class BadArgument(HarnessError):
    """A command-line value outside what the command accepts."""


class MissingFile(BadArgument):
    """A file or directory the user named does not exist."""


def existing(path: str | os.PathLike[str], what: str) -> Path:
    """``path``, or a MissingFile naming it and ``what`` it was to be."""
    if not os.path.exists(path):
        raise MissingFile(f"no such file or directory: {os.fspath(path)} ({what})")
    return Path(path)


class LimiterError(HarnessError):
    """The limiter under test never gave a decision: it raised, or answered what is not one.
    The message is the first such answer, in one line."""


class Unscheduled(HarnessError):
    """Commands of the limiter reached Redis by a client the explorer cannot see: no schedule
    chose when they ran, so a verdict would not cover them (unless the user allows it)."""


class RealClock(HarnessError):
    """The limiter reads a clock the explorer cannot move (one its decisions' ``now`` gave
    away): the schedule's time never reached it, so a verdict would not cover it (unless the
    user allows it)."""


class ClockUncontrolled(EnvironmentFailure):
    """A program the race starts cannot run on the schedule's clock here (ptrace refused, an
    architecture not covered): judged on real time, a verdict could accuse it falsely."""


class OutputError(HarnessError):
    """A file the user asked for that cannot be written (no such directory, no permission)."""


@contextlib.contextmanager
def writing(path: str | os.PathLike[str]) -> Iterator[None]:
    """Around writing ``path``: an OSError becomes an OutputError naming it."""
    try:
        yield
    except OSError as error:
        raise OutputError(f"cannot write {os.fspath(path)}: {error.strerror or error}") from None


def described(error: BaseException) -> str:
    """An exception in one line: its type and message."""
    return f"{type(error).__name__}: {error}".replace("\r", " ").replace("\n", " ")
