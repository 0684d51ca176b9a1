"""One run, one directory, named here and only here; and what any run keeps in it so that it can
be judged again later (``python -m harness check RUN_DIR``) without running it again.

A run directory is ``runs/KIND[-NAME]-YYYYmmdd-HHMMSS`` (``-2``, ``-3``... after it when that
is taken: two runs never share one). Its ``manifest.json`` says what ran and lists what was
judged: for each, a name, the policy it was judged by and three files beside it, the history
(JSON Lines), the keys the run left with their TTLs (JSON Lines) and the verdict (JSON).
"""

from __future__ import annotations

import itertools
import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.checkers import Verdict, check
from harness.errors import HarnessError, writing
from harness.history import Operation, read_history, write_history
from harness.history.snapshot import read_snapshot, write_snapshot
from limiters import Policy

RUNS = Path("runs")
MANIFEST = "manifest.json"


class RunDirError(HarnessError):
    """A directory that is not a run directory, or one whose files cannot be read."""


def new_run_dir(kind: str, name: str = "", root: Path | None = None) -> Path:
    """A new, empty run directory of its own, in ``root`` (``RUNS`` by default)."""
    root = RUNS if root is None else root
    stem = "-".join(part for part in (kind, name.replace(":", "."), _now()) if part)
    with writing(root):
        root.mkdir(parents=True, exist_ok=True)
        for n in itertools.count(1):
            candidate = root / (stem if n == 1 else f"{stem}-{n}")
            try:
                candidate.mkdir()
            except FileExistsError:
                continue
            _write_json(candidate / MANIFEST, {"kind": kind, "name": name, "judged": []})
            return candidate
    raise AssertionError("unreachable")


def keep_judged(
    directory: Path,
    stem: str,
    *,
    policy: Policy,
    history: Sequence[Operation],
    ttls: Mapping[str, float],
    verdict: Verdict,
) -> None:
    """Keep one judged history in ``directory`` (``STEM.history.jsonl``, ``STEM.keys.jsonl``,
    ``STEM.verdict.json``; ``stem`` may name a folder in it) and list it in the directory's
    manifest, when it has one."""
    files = {
        "history": f"{stem}.history.jsonl",
        "keys": f"{stem}.keys.jsonl",
        "verdict": f"{stem}.verdict.json",
    }
    with writing(directory):
        (directory / stem).parent.mkdir(parents=True, exist_ok=True)
        write_history(directory / files["history"], history)
        write_snapshot(directory / files["keys"], dict(ttls))
        _write_json(directory / files["verdict"], verdict.to_json())
        manifest_path = directory / MANIFEST
        if manifest_path.exists():
            manifest = json.loads(manifest_path.read_text())
            manifest["judged"].append({"name": stem, "policy": str(policy), **files})
            _write_json(manifest_path, manifest)


@dataclass(frozen=True)
class Rejudged:
    """One judged history of a run, judged again."""

    name: str
    verdict: Verdict
    recorded: dict[str, Any]  # the verdict the run wrote

    @property
    def same(self) -> bool:
        return bool(self.verdict.to_json() == self.recorded)


def rejudge(directory: Path) -> list[Rejudged]:
    """Every history the run in ``directory`` judged, judged again from its files."""
    manifest_path = directory / MANIFEST
    try:
        manifest = json.loads(manifest_path.read_text())
        judged = list(manifest["judged"])
    except FileNotFoundError:
        raise RunDirError(f"{directory}: not a run directory (no {MANIFEST})") from None
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise RunDirError(f"{manifest_path}: unreadable ({error})") from None
    found = []
    for entry in judged:
        try:
            policy = Policy.parse(entry["policy"])
            history = read_history(directory / entry["history"])
            ttls = read_snapshot(directory / entry["keys"])
            recorded = json.loads((directory / entry["verdict"]).read_text())
        except (OSError, ValueError, KeyError) as error:
            raise RunDirError(f"{directory}: {entry.get('name', '?')}: {error}") from None
        found.append(Rejudged(str(entry["name"]), check(history, policy, ttls), recorded))
    return found


def _now() -> str:
    return time.strftime("%Y%m%d-%H%M%S")


def _write_json(path: Path, data: object) -> None:
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(data, indent=1))
    os.replace(partial, path)
