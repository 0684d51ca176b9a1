"""Recording one process's operations as they happen, so that a kill loses none of them."""

from __future__ import annotations

import itertools
import json
import math
import os
import time
from collections.abc import Callable
from types import TracebackType

from ratelimit_harness.harness.history.appends import AppendFile
from ratelimit_harness.harness.history.journal import complete_line, give_back_line, invoke_line
from ratelimit_harness.harness.history.operation import Outcome

_OUTCOME_JSON = {outcome: json.dumps(outcome.value) for outcome in Outcome}
_INF = math.inf
_KEYS_CACHED = 65536


class Recorder:
    """Appends one process's journal (see ``harness.history.journal``), a record at a time.

    ``invoke(key)`` records an operation about to run, before it runs, and returns its token;
    ``complete(token, outcome, now)`` records how it ended; ``give_back(token)`` and
    ``given_back(token)``, around the give-back of an allowed one. Each record reaches the OS in one
    ``os.write`` on an ``O_APPEND`` descriptor (``AppendFile``), nothing buffered below, so a
    process killed at any point loses only the operations in flight, which the journal still
    shows as invoked (a crash of the machine itself may lose more: nothing is fsynced).

    With ``hold_for`` seconds (0: none), the records that end something (a completion, a
    give-back's answer) wait in memory, at most that long, and reach the OS with the next
    record that begins something, in the same write: one write an operation instead of two.
    A record that begins something (an invoke, a give-back) is never held, so a kill still
    leaves every operation that began; those whose end was held become in flight, ``unknown``.
    The journal stays in time order (but see ``complete``'s ``at``). Call ``flush`` from a
    timer, for a process gone quiet.

    ``process`` names the process in every record; times come from ``clock`` (seconds; every
    process of a run must share it). The journal must not exist yet. A recorder may be shared
    by the threads of its process. Close it, or use it as a context manager; operations still
    in flight then stay as they are, invoked and never completed.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        process: str,
        clock: Callable[[], float] = time.time,
        *,
        hold_for: float = 0.0,
    ) -> None:
        if not isinstance(process, str):
            raise TypeError(f"a process is named by a str, not {process!r}")
        self.path = os.fspath(path)
        self.process = process
        self._process_json = json.dumps(process)
        self._clock = clock
        self._ops = itertools.count()
        self._in_flight: set[int] = set()
        self._keys_json: dict[str, str] = {}
        self._file = AppendFile(path, exclusive=True, hold_for=hold_for)

    def invoke(self, key: str, cost: int = 1) -> int:
        """Record that an operation on ``key`` is about to run, costing ``cost`` units of the
        budget; its token for ``complete``."""
        try:
            key_json = self._keys_json[key]
        except KeyError:
            key_json = self._cache_key(key)
        op = next(self._ops)
        if cost != 1 and (type(cost) is not int or cost < 1):
            raise ValueError(f"a cost is a whole number from 1, not {cost!r}")
        self._file.write(invoke_line(op, self._process_json, key_json, self._time(), cost))
        self._in_flight.add(op)
        return op

    def complete(
        self, token: int, outcome: Outcome, now: float | None = None, *, at: float | None = None
    ) -> None:
        """Record that the operation ``token`` ended with ``outcome``; ``now`` is the instant
        the limiter believed it was, when it said. Each token completes once. ``at``: when it
        ended, for a completion recorded after the fact (the journal then leaves time order,
        which a merge does not need); by default, now by ``clock``."""
        try:
            outcome_json = _OUTCOME_JSON[outcome]
        except KeyError:
            raise ValueError(f"unknown outcome {outcome!r}") from None
        if now is not None:
            now = float(now)
            if not -_INF < now < _INF:
                raise ValueError(f"now must be finite, not {now!r}")
        line = complete_line(token, self._time(at), outcome_json, now)
        try:
            self._in_flight.remove(token)
        except KeyError:
            raise ValueError(f"operation {token!r} is not in flight in {self.path}") from None
        self._file.hold(line)

    def give_back(self, token: int) -> None:
        """Record that the allowed operation ``token`` is about to be given back (its work
        failed downstream, say); ``given_back(token)`` once the give-back has answered."""
        if token in self._in_flight:
            raise ValueError(f"operation {token!r} has not completed in {self.path}")
        self._file.write(give_back_line(token, self._time(), "refund"))

    def given_back(self, token: int) -> None:
        """Record that the give-back of ``token`` answered (it took effect, or was refused: the
        limiter's business; a give-back that raised is never marked so)."""
        self._file.hold(give_back_line(token, self._time(), "refunded"))

    def flush(self) -> None:
        """The records held (``hold_for``), to the OS now."""
        self._file.flush()

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> Recorder:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def _time(self, at: float | None = None) -> float:
        """``at``, else the clock's time, as a finite float."""
        now = float(self._clock() if at is None else at)
        if not -_INF < now < _INF:
            raise ValueError(
                f"the clock said {now!r}" if at is None else f"at must be finite, not {now!r}"
            )
        return now

    def _cache_key(self, key: str) -> str:
        if not isinstance(key, str):
            raise TypeError(f"a key is a str, not {key!r}")
        if len(self._keys_json) >= _KEYS_CACHED:
            self._keys_json.clear()
        key_json = self._keys_json[key] = json.dumps(key)
        return key_json
