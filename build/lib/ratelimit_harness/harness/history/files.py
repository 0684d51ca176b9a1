"""A JSON file of a run directory, written whole or not at all."""

from __future__ import annotations

import json
import os
from pathlib import Path


def write_json(path: Path, data: object) -> None:
    """``data`` as ``path``: written beside it, then renamed over it, so that a reader (or a
    run killed meanwhile) never finds half a file."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(data, indent=1), encoding="utf-8")
    os.replace(partial, path)
