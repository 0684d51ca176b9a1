"""SIGTERM as an exit (143), so that every server a command started is stopped on the way out;
and a pause that ends at one.

The exit is an exception raised wherever the main thread is when the signal comes. Where that
is a finalizer (a weakref callback, a ``__del__``), Python prints it and carries on, and a long
sleep after would keep the process alive; so the handler also sets a flag, and long waits use
``pause``, which exits as soon as the flag is set.

The handler takes no lock. It runs in the main thread, between two bytecodes of whatever that
thread was doing; had it to take a lock that thread held (a ``threading.Event``'s, say, in the
middle of ``wait``), it would wait for itself for ever.
"""

from __future__ import annotations

import signal
import sys
import time

EXIT_CODE = 143  # 128 + SIGTERM, as a shell reports a process TERM ended
POLL_SECONDS = 0.1  # how late a pause may notice a SIGTERM whose exit was swallowed

_sigterms: list[int] = []  # one entry per SIGTERM come; appending takes no lock


def exit_on_sigterm() -> None:
    signal.signal(signal.SIGTERM, _terminate)


def pause(seconds: float) -> None:
    """Sleep ``seconds``; exit (SystemExit 143) if SIGTERM came, before or during it."""
    deadline = time.monotonic() + seconds
    while not _sigterms:
        left = deadline - time.monotonic()
        if left <= 0:
            return
        time.sleep(min(left, POLL_SECONDS))  # a SIGTERM here raises from inside the sleep
    sys.exit(EXIT_CODE)


def _terminate(signum: int, _frame: object) -> None:
    _sigterms.append(signum)
    sys.exit(EXIT_CODE)
