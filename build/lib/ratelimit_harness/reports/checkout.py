"""The checkout a benchmark ran in, for its record: the commit, and whether its code differed."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def git(*args: str) -> str:
    """What ``git ARGS`` prints in the checkout; empty if it fails (no git, not a checkout)."""
    done = subprocess.run(["git", *args], capture_output=True, text=True, cwd=ROOT, check=False)
    return done.stdout.strip() if done.returncode == 0 else ""


def commit() -> str:
    """HEAD's short hash, or ``unknown``."""
    return git("rev-parse", "--short", "HEAD") or "unknown"


def code_changed() -> bool:
    """Whether a tracked file other than the docs (``.md``) and the benchmarks' own records
    (``bench/*.json``, ``bench/*.jsonl``, which a benchmark writes as it runs) has uncommitted
    changes: figures measured on code no commit holds."""
    changed = git("status", "--porcelain", "--untracked-files=no", "--", ".").splitlines()
    # "XY PATH" or "XY OLD -> NEW"; the output comes stripped, the first line's X with it
    return any(not _record_or_doc(line.split(maxsplit=1)[-1].split(" -> ")[-1]) for line in changed)


def _record_or_doc(path: str) -> bool:
    return path.endswith(".md") or (
        path.startswith("bench/") and path.endswith((".json", ".jsonl"))
    )
