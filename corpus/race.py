"""Race one corpus row as a user would, ``ratelimit-harness race``, in a subprocess whose
``PYTHONPATH`` puts the row's library release first, and read what it found from ``--json``."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from corpus.install import ROOT
from corpus.page import verdict
from corpus.table import Row
from ratelimit_harness.limiters.program import EXEC

SEED = 1  # one seed for every row, so a rerun draws the same schedules
MAX_EXAMPLES = 300  # schedules per search (race's quick profile): the corpus takes minutes
TIMEOUT = 600  # seconds for one row, far above what one takes


@dataclass(frozen=True)
class Raced:
    exit_code: int
    found: Mapping[str, frozenset[str]]  # kind -> the faults of the first flaw that shows it
    output: str  # what race printed, for a failure's message

    def matches(self, row: Row) -> bool:
        expected_exit = 1 if row.expected else 0
        return self.exit_code == expected_exit and self.found == row.expected

    def said(self) -> str:
        """What the race concluded, in a line: its verdict, or why it gave none (exit 2)."""
        if self.exit_code == 2:
            lines = self.output.strip().splitlines()
            return f"no verdict: {lines[-1] if lines else 'race printed nothing'}"
        return verdict(self.found)


def _limiter(row: Row) -> str:
    """The row's wrapper as the race is given it (--limiter): a program's files of the project
    made absolute, since the race runs in a directory of its own."""
    if not row.wrapper.startswith(EXEC):
        return row.wrapper
    words = shlex.split(row.wrapper.removeprefix(EXEC))
    return EXEC + shlex.join(
        str(ROOT / word) if (ROOT / word).is_file() else word for word in words
    )


def race(row: Row, workdir: Path) -> Raced:
    summary, traces = workdir / f"{row.slug}.json", workdir / f"{row.slug}-trace.json"
    command = [sys.executable, "-m", "ratelimit_harness", "race", "--limiter", _limiter(row)]
    command += ["--policy", row.policy, "--nemesis", row.nemesis, "--seed", str(SEED)]
    command += ["--max-examples", str(MAX_EXAMPLES), "--json", str(summary), "--trace", str(traces)]
    if row.costs != (1,):
        command += ["--costs", ",".join(map(str, row.costs))]
    paths = [str(ROOT)] if row.in_corpus_extra else [str(ROOT / row.directory), str(ROOT)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    if row.runtime == "node":
        env["CORPUS_NPM_DIR"] = str(ROOT / row.directory)
    done = subprocess.run(
        command, check=False, env=env, cwd=workdir, capture_output=True, text=True, timeout=TIMEOUT
    )
    output = done.stdout + done.stderr
    found: dict[str, frozenset[str]] = {}
    if summary.is_file():
        for flaw in json.loads(summary.read_text())["flaws"]:
            for kind in flaw["kinds"]:
                found.setdefault(kind, frozenset(flaw["faults"]))
    return Raced(done.returncode, found, output)
