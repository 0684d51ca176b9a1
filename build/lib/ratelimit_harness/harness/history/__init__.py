"""Histories: what a run did, one operation per line, as the checkers read it.

Each process records its own journal with a ``Recorder``; ``merge_journals`` pairs the records
into operations; ``read_history`` and ``write_history`` read and write the interchange file.
"""

from ratelimit_harness.harness.history.errors import HistoryError
from ratelimit_harness.harness.history.jsonl import (
    format_operation,
    iter_history,
    read_history,
    write_history,
)
from ratelimit_harness.harness.history.merge import merge_into_history, merge_journals
from ratelimit_harness.harness.history.operation import Operation, Outcome
from ratelimit_harness.harness.history.recorder import Recorder

__all__ = [
    "HistoryError",
    "Operation",
    "Outcome",
    "Recorder",
    "format_operation",
    "iter_history",
    "merge_into_history",
    "merge_journals",
    "read_history",
    "write_history",
]
