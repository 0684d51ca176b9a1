"""``python -m corpus.install``: install every row's pins that do not share the harness'
environment, each library release into its directory (``Row.directory``), with ``--no-deps``:
exactly the pins, nothing resolved, so the redis client stays the harness' own. A directory
whose pins are already there is left alone. Rows whose pins come from the ``corpus`` extra are
only checked, and named when missing.

A release from npm (``runtime`` node) is installed with ``npm install --prefix``, its pins
exact; what they depend on beyond the pins npm resolves, and records in the directory's
``package-lock.json``; peers are not installed (``--legacy-peer-deps``: a wrapper calls none).
Where npm is missing those rows are named and left out (their race then skips)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from corpus.table import ROWS, Row

ROOT = Path(__file__).resolve().parent.parent
MARKER = ".pins"  # in each directory: its pins, one a line, written once pip has installed them


def installed(row: Row) -> bool:
    if row.in_corpus_extra:
        return not missing_from_environment(row)
    marker = ROOT / row.directory / MARKER
    return marker.is_file() and marker.read_text() == _pin_lines(row)


def missing_from_environment(row: Row) -> list[str]:
    """The row's pins this environment does not have at their version."""
    missing = []
    for pin in row.pins:
        name, _, version = pin.partition("==")
        try:
            found = metadata.version(name)
        except metadata.PackageNotFoundError:
            found = None
        if found != version:
            missing.append(pin)
    return missing


NPM_INSTALL = (
    "install",
    "--save-exact",
    "--legacy-peer-deps",
    "--no-audit",
    "--no-fund",
    "--loglevel=error",
)


def install(row: Row) -> None:
    directory = ROOT / row.directory
    shutil.rmtree(directory, ignore_errors=True)
    if row.runtime == "node":
        directory.mkdir(parents=True)
        npm = [npm_path() or "npm", *NPM_INSTALL, "--prefix", str(directory)]
        subprocess.run([*npm, *row.pins], check=True)
    else:
        command = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target"]
        subprocess.run([*command, str(directory), *row.pins], check=True)
    (directory / MARKER).write_text(_pin_lines(row))


def npm_path() -> str | None:
    return shutil.which("npm")


def _pin_lines(row: Row) -> str:
    return "".join(f"{pin}\n" for pin in row.pins)


def main() -> int:
    missing: set[str] = set()
    for row in ROWS:
        if row.runtime == "node" and npm_path() is None:
            print(f"corpus: npm is missing, {row.library} left out")
        elif row.in_corpus_extra:
            missing.update(missing_from_environment(row))
        elif not installed(row):
            print(f"corpus: installing {' '.join(row.pins)} into {row.directory}")
            install(row)
    if missing:
        print(f"corpus: missing {' '.join(sorted(missing))}: pip install -e '.[corpus]'")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
