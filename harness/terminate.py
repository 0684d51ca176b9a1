"""SIGTERM as an exit (143), so that every server a command started is stopped on the way out;
and a pause that ends at one.

The exit is an exception raised wherever the main thread is when the signal comes. Where that
is a finalizer (a weakref callback, a ``__del__``), Python prints it and carries on, and a long
sleep after would keep the process alive; so the handler also sets ``TERMINATED``, and long
waits use ``pause``, which returns at once and exits when it is set.
"""

from __future__ import annotations

import signal
import sys
import threading

EXIT_CODE = 143  # 128 + SIGTERM, as a shell reports a process TERM ended
TERMINATED = threading.Event()


def exit_on_sigterm() -> None:
    signal.signal(signal.SIGTERM, _terminate)


def pause(seconds: float) -> None:
    """Sleep ``seconds``; exit (SystemExit 143) if SIGTERM came, before or during it."""
    if TERMINATED.wait(seconds):
        sys.exit(EXIT_CODE)


def _terminate(*_: object) -> None:
    TERMINATED.set()
    sys.exit(EXIT_CODE)
