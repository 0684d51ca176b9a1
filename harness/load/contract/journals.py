"""Where a load run's processes journal their decisions, one journal per process and rule.

    RUN_DIR/journals/server/<rule>/<process>-<pid>.jsonl   what an app instance decided
    RUN_DIR/journals/client/<rule>/<process>-<pid>.jsonl   what a Locust process saw
    RUN_DIR/journals/server/<rule>/<process>-<pid>.error   the first failure of its limiter

Each journal is a ``Recorder``'s (``harness.history``): a process killed mid-run leaves every
decision it completed, and those in flight as invoked (``unknown`` once merged). A Locust
process records its completions a batch at a time (``harness.load.traffic.answers``), so its kill
also leaves the last ones it had not yet taken in as invoked: the answers of its last tenth of a
second or so.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from ratelimit_harness.harness.history import Recorder

SIDES = ("server", "client")


class Journals:
    """One process's recorders, one per rule, opened on first use (thread-safe), each holding
    its records that end something ``hold_for`` seconds at most (``Recorder``)."""

    def __init__(
        self,
        run_dir: str | os.PathLike[str],
        side: str,
        process: str,
        clock: Callable[[], float] = time.time,
        *,
        hold_for: float = 0.0,
    ) -> None:
        if side not in SIDES:
            raise ValueError(f"side is one of {SIDES}, not {side!r}")
        self.root = Path(run_dir) / "journals" / side
        self.process = process
        self.clock = clock  # the run's one clock, whatever the process's own says
        self.hold_for = hold_for
        self._recorders: dict[str, Recorder] = {}
        self._lock = threading.Lock()

    def __getitem__(self, rule: str) -> Recorder:
        try:
            return self._recorders[rule]
        except KeyError:
            pass
        with self._lock:
            if rule not in self._recorders:
                folder = self.root / rule
                folder.mkdir(parents=True, exist_ok=True)
                path = folder / f"{self.process}-{os.getpid()}.jsonl"
                recorder = Recorder(path, self.process, self.clock, hold_for=self.hold_for)
                self._recorders[rule] = recorder
            return self._recorders[rule]

    def note_error(self, rule: str, text: str) -> None:
        """Keep ``text`` (a limiter's failure) beside the rule's journal, as ``.error``."""
        folder = self.root / rule
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{self.process}-{os.getpid()}.error").write_text(text)

    def flush(self) -> None:
        """Every recorder's held records, to the OS now."""
        for recorder in list(self._recorders.values()):
            recorder.flush()

    def close(self) -> None:
        with self._lock:
            for recorder in self._recorders.values():
                recorder.close()


class JournalTail:
    """The complete lines a growing file gained since the last read."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.partial = b""

    def lines(self) -> list[bytes]:
        *whole, self.partial = (self.partial + self._gained()).split(b"\n")
        return whole

    def whole(self) -> bytes:
        """The whole lines gained, as they are in the file (each with its newline)."""
        data = self.partial + self._gained()
        cut = data.rfind(b"\n") + 1
        data, self.partial = data[:cut], data[cut:]
        return data

    def _gained(self) -> bytes:
        with self.path.open("rb") as file:
            file.seek(self.offset)
            data = file.read()
        self.offset += len(data)
        return data


COMPLETE = b'"event": "complete"'  # in a complete record only (``journal.complete_line``)
BLOCK_BYTES = 4 << 20  # of a journal, read at once to count its invokes


class Completions:
    """How many operations the journals of one side of a run completed, per rule: counted in
    what each file gained since the last count (a bytes search, no parsing), so the count is as
    fresh as the journals. A decision is a fact once its record is written."""

    def __init__(self, run_dir: str | os.PathLike[str], side: str) -> None:
        self.run_dir, self.side = Path(run_dir), side
        self._tails: dict[Path, JournalTail] = {}
        self._counts: dict[str, int] = {}

    def count(self, rule: str) -> int:
        counted = self._counts.get(rule, 0)
        for path in journal_paths(self.run_dir, self.side, rule):
            tail = self._tails.get(path) or self._tails.setdefault(path, JournalTail(path))
            counted += tail.whole().count(COMPLETE)
        self._counts[rule] = counted
        return counted


def first_error(run_dir: str | os.PathLike[str], rule: str) -> str | None:
    """The failure an instance kept for ``rule`` (``Journals.note_error``), if one did."""
    found = sorted((Path(run_dir) / "journals" / "server" / rule).glob("*.error"))
    return found[0].read_text() if found else None


def journal_paths(run_dir: str | os.PathLike[str], side: str, rule: str) -> list[Path]:
    """Every journal of ``rule`` on ``side`` of a run, in a stable order."""
    return sorted((Path(run_dir) / "journals" / side / rule).glob("*.jsonl"))


def invokes(path: Path) -> int:
    """How many operations a journal says were invoked (whole invoke records; a last line cut
    short by a kill was never followed by its request): counted apart from the merge, to hold
    the merged history to."""
    count, carry = 0, b""
    with path.open("rb") as journal:
        while block := journal.read(BLOCK_BYTES):
            whole, _, carry = (carry + block).rpartition(b"\n")  # a line's end, or none yet
            count += whole.count(b'"event": "invoke"')  # at most once a line
    return count  # the last piece, without its newline, is not whole
