"""Reading a JSON Lines file: one record a line, each converted, each with its line number.

A caller may pass ``fast``, a decoder of a whole batch of lines that returns None unless it is
sure of every line (msgspec decoding straight into typed records, say). Otherwise the reader
parses a batch of lines with one ``json.loads`` (more than twice as fast as one call a line) and
falls back to parsing the batch line by line, which is the definition, whenever that fails or
might differ from it. The fast path is exact because a batch takes it only when every line
starts with ``{`` and the batch decodes to as many records as it has lines, and because every
converter rejects a record holding an object or an array: then no record can span
lines (a JSON string holds no raw newline) and no line can hold two records.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

from ratelimit_harness.harness.history.errors import HistoryError, InvalidRecord

T = TypeVar("T")
BATCH_BYTES = 1 << 20


def read_batches(
    path: str | os.PathLike[str],
    convert: Callable[[object], T],
    *,
    fast: Callable[[list[bytes]], list[T] | None] | None = None,
    drop_torn_tail: bool = False,
) -> Iterator[tuple[Sequence[int], list[T]]]:
    """Yield, batch after batch in file order, the line numbers of the non-blank lines of
    ``path`` and ``convert`` of each line's decoded JSON value.

    Line numbers start at 1 and count blank lines. ``convert`` raises InvalidRecord when a value
    is not the record expected; it must reject any record holding a JSON object or array. With
    ``drop_torn_tail``, a last line that lacks its newline is an unfinished write and is
    skipped. ``fast(lines)``, when given, is tried first on each batch: it returns exactly what
    ``convert`` would for each line, or None. Raises HistoryError (file and line) at the first
    line that is not UTF-8, not JSON, or not accepted by ``convert``, and (file and OS reason)
    when the file cannot be read.
    """
    try:
        with open(path, "rb") as file:
            first = 1
            while lines := file.readlines(BATCH_BYTES):
                numbers: Sequence[int] = range(first, first + len(lines))
                first += len(lines)
                if drop_torn_tail and not lines[-1].endswith(b"\n"):  # only at the end of file
                    del lines[-1]
                    numbers = numbers[:-1]
                if any(map(bytes.isspace, lines)):
                    numbers = [
                        n for n, line in zip(numbers, lines, strict=True) if not line.isspace()
                    ]
                    lines = [line for line in lines if not line.isspace()]
                if lines:
                    yield numbers, convert_lines(path, numbers, lines, convert, fast=fast)
    except OSError as error:
        raise HistoryError(f"cannot read: {error.strerror or error}", path) from None


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector, which otherwise rescans every object built so far,
    again and again, while a million are built (a third of the reading time)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def convert_lines(
    path: str | os.PathLike[str],
    numbers: Sequence[int],
    lines: list[bytes],
    convert: Callable[[object], T],
    *,
    fast: Callable[[list[bytes]], list[T] | None] | None = None,
) -> list[T]:
    """``convert`` of each of ``lines``, the non-blank lines of ``path`` numbered ``numbers``,
    as ``read_batches`` converts a batch (``fast`` tried first). Raises HistoryError."""
    records = fast(lines) if fast else None
    return records or _converted(path, numbers, lines, convert)


def _converted(
    path: str | os.PathLike[str],
    numbers: Sequence[int],
    lines: list[bytes],
    convert: Callable[[object], T],
) -> list[T]:
    text = b",".join(lines)
    # Every line starts with "{" exactly when each joint "\n," is followed by "{" (a line holds
    # no newline but its last byte, and every line but the batch's last ends with one).
    if text[:1] == b"{" and text.count(b"\n,{") == len(lines) - 1:
        try:
            records = json.loads(f"[{text.decode()}]")
            if len(records) == len(lines):
                return list(map(convert, records))
        except (ValueError, RecursionError, InvalidRecord):
            pass  # reading line by line finds the line and says what is wrong
    return [
        _converted_line(path, number, line, convert)
        for number, line in zip(numbers, lines, strict=True)
    ]


def _converted_line(
    path: str | os.PathLike[str], number: int, line: bytes, convert: Callable[[object], T]
) -> T:
    try:
        record = json.loads(line.rstrip(b"\r\n").decode())
    except UnicodeDecodeError as error:
        problem = f"not UTF-8: {error.reason} at byte {error.start + 1}"
        raise HistoryError(problem, path, number) from None
    except json.JSONDecodeError as error:
        problem = f"invalid JSON: {error.msg} (column {error.pos + 1})"
        raise HistoryError(problem, path, number) from None
    except (ValueError, RecursionError) as error:  # an integer too long, nesting too deep
        raise HistoryError(f"invalid JSON: {error}", path, number) from None
    try:
        return convert(record)
    except InvalidRecord as error:
        raise HistoryError(str(error), path, number) from None
