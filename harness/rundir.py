"""One run, one directory, named here and only here; and what any run keeps in it so that it can
be judged again later (``ratelimit-harness check RUN_DIR``) without running it again.

A run directory is ``runs/KIND[-NAME]-YYYYmmdd-HHMMSS`` (``-2``, ``-3``... after it when that
is taken: two runs never share one); its ``manifest.json`` says what ran. Each history it judged
is three files, ``STEM.history.jsonl``, ``STEM.keys.jsonl`` (the keys the run left, with their
TTLs) and ``STEM.verdict.json`` (which names the policy): files of their own, so that the
processes of one run (race-test's workers) never write one file together.
"""

from __future__ import annotations

import itertools
import json
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ratelimit_harness.harness.checkers import Verdict
from ratelimit_harness.harness.checkers.partitions import check_file
from ratelimit_harness.harness.errors import HarnessError, writing
from ratelimit_harness.harness.history import Operation, write_history
from ratelimit_harness.harness.history.files import write_json
from ratelimit_harness.harness.history.loads import VERDICT as LOAD_VERDICT
from ratelimit_harness.harness.history.snapshot import read_snapshot, write_snapshot
from ratelimit_harness.limiters import Policy

RUNS = Path("runs")
MANIFEST = "manifest.json"
LONGEST = 60  # characters of a run's name in its directory's name
HISTORY, KEYS, VERDICT = ".history.jsonl", ".keys.jsonl", ".verdict.json"


class RunDirError(HarnessError):
    """A directory that is not a run directory, or one whose files cannot be read."""


def new_run_dir(kind: str, name: str = "", root: Path | None = None) -> Path:
    """A new, empty run directory of its own, in ``root`` (``RUNS`` by default)."""
    root = RUNS if root is None else root
    stem = "-".join(part for part in (kind, _word(name), _now()) if part)
    with writing(root):
        root.mkdir(parents=True, exist_ok=True)
        for n in itertools.count(1):
            candidate = root / (stem if n == 1 else f"{stem}-{n}")
            try:
                candidate.mkdir()
            except FileExistsError:
                continue
            write_json(candidate / MANIFEST, {"kind": kind, "name": name})
            return candidate
    raise AssertionError("unreachable")


def keep_judged(
    directory: Path,
    stem: str,
    *,
    policy: Policy,
    history: Sequence[Operation] | None = None,
    ttls: Mapping[str, float] | None,
    verdict: Verdict,
) -> None:
    """Keep one judged history in ``directory`` (``STEM.history.jsonl``, ``STEM.keys.jsonl``,
    ``STEM.verdict.json``; ``stem`` may name a folder in it). ``history`` None: its file is in
    place already (a merged one, written there). ``ttls`` None: it was judged with no snapshot
    of the keys (none could be read), and no keys file says otherwise."""
    where = directory / stem
    with writing(directory):
        where.parent.mkdir(parents=True, exist_ok=True)
        if history is not None:
            write_history(where.with_name(where.name + HISTORY), history)
        if ttls is not None:
            write_snapshot(where.with_name(where.name + KEYS), dict(ttls))
        # last: a verdict file says its history and keys are whole (and holds its policy)
        write_json(where.with_name(where.name + VERDICT), verdict.to_json())


@dataclass(frozen=True)
class Rejudged:
    """One judged history of a run, judged again."""

    name: str
    verdict: Verdict
    recorded: dict[str, Any]  # the verdict the run wrote

    @property
    def same(self) -> bool:
        """Whether it concludes what the run recorded. A kind judged now that the run's
        harness did not judge yet (``excess-ttl`` on an older run) counts only if found."""
        now = self.verdict.to_json()
        added = set(now["checked"]) - set(self.recorded.get("checked", now["checked"]))
        if not added & {violation["kind"] for violation in now["violations"]}:
            now["checked"] = [kind for kind in now["checked"] if kind not in added]
        return bool(now == self.recorded)


def never_judged_load(directory: Path) -> bool:
    """A load (or serve) run's directory with no verdict: its harness ended before judging."""
    try:
        kind = json.loads((directory / MANIFEST).read_text()).get("kind")
    except (OSError, ValueError, AttributeError):
        return False
    return kind in ("load", "serve") and not (directory / LOAD_VERDICT).exists()


def rejudge(directory: Path) -> list[Rejudged]:
    """Every history the run in ``directory`` judged, judged again from its files."""
    if not (directory / MANIFEST).is_file():
        raise RunDirError(f"{directory}: not a run directory (no {MANIFEST})")
    found = []
    for verdict_path in sorted(directory.rglob(f"*{VERDICT}")):
        name = verdict_path.relative_to(directory).as_posix().removesuffix(VERDICT)
        where = directory / name
        history = where.with_name(where.name + HISTORY)
        try:
            recorded = json.loads(verdict_path.read_text())
            policy = Policy.parse(recorded["policy"])
            keys = where.with_name(where.name + KEYS)
            ttls = read_snapshot(keys) if keys.exists() else None
            verdict = check_file(history, policy, ttls, unjudged=recorded.get("unjudged"))
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise RunDirError(f"{directory}: {name}: {error}") from None
        found.append(Rejudged(name, verdict, recorded))
    return found


def _word(name: str) -> str:
    """A name as one word of a directory's name: a limiter's ``module:attr`` or ``exec:``
    command line with what a path cannot hold (``/``, spaces) made dots, at most ``LONGEST``."""
    word = re.sub(r"[^A-Za-z0-9_-]*[^A-Za-z0-9_.-][^A-Za-z0-9_-]*", ".", name).strip(".")
    return word[:LONGEST].rstrip(".")


def _now() -> str:
    return time.strftime("%Y%m%d-%H%M%S")
