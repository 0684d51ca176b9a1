"""What reading a history or a journal raises when the input is bad."""

from __future__ import annotations

import os


class HistoryError(ValueError):
    """Bad input: a file that cannot be read, or a line that is not a valid record.

    The message is one line: ``file:line: what is wrong`` (``file: why`` when the file itself
    cannot be read). ``path``, ``line`` (1-based, None for the whole file) and ``problem`` hold
    its parts.
    """

    def __init__(self, problem: str, path: str | os.PathLike[str], line: int | None = None) -> None:
        self.problem = problem
        self.path = os.fspath(path)
        self.line = line
        where = self.path if line is None else f"{self.path}:{line}"
        super().__init__(f"{where}: {problem}".replace("\r", "\\r").replace("\n", "\\n"))

    def __reduce__(self) -> tuple[type[HistoryError], tuple[str, str, int | None]]:
        return type(self), (self.problem, self.path, self.line)


class InvalidRecord(Exception):
    """Raised by a record converter for well-formed JSON that is not the record it should be;
    the reader turns it into a HistoryError naming the file and line. The message is one line."""
