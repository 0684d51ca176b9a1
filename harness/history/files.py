"""A file of a run directory, written whole or not at all."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO


@contextlib.contextmanager
def replacing(path: str | os.PathLike[str]) -> Iterator[BinaryIO]:
    """A file to write ``path`` with: written beside it, then renamed over it once the block
    ends, so that a reader (or a run killed meanwhile) never finds half a file. If the block
    raises, the partial file is removed and ``path`` left as it was."""
    partial = f"{os.fspath(path)}.partial"
    try:
        with open(partial, "wb") as file:
            yield file
        os.replace(partial, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(partial)
        raise


def write_json(path: Path, data: object) -> None:
    """``data`` as ``path``, written whole or not at all (``replacing``)."""
    with replacing(path) as file:
        file.write(json.dumps(data, indent=1).encode())
