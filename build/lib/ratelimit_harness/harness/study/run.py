"""``ratelimit-harness study``: the chapter's comparison table (Part 10) measured on a Redis the
harness provisions, into a run directory (``runs/study-TIME/``, ``harness.rundir``):

    RUN_DIR/manifest.json  what ran
    RUN_DIR/study.json     every measurement, with the chapter's claims beside them
    RUN_DIR/history/MEASUREMENT/LIMITER.{history,keys}.jsonl, .verdict.json
                           every decision made on Redis, judged (``judged``)
    RUN_DIR/summary.md, report.html, memory.png    the report (``reports/study.py``)
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ratelimit_harness.harness.errors import writing
from ratelimit_harness.harness.provision import RedisServer
from ratelimit_harness.harness.study import accuracy, burst, cost, memory
from ratelimit_harness.harness.study.judged import Histories
from ratelimit_harness.harness.study.space import Space
from ratelimit_harness.harness.study.subjects import FOOTNOTE, LIMIT, SUBJECTS
from ratelimit_harness.harness.study.workload import Workload


@dataclass(frozen=True)
class Sizes:
    """How much of each measurement: the full study, or ``--quick`` (tests, CI)."""

    rates: tuple[int, ...]  # requests per window, for memory per identity
    entries: int  # log entries for the sorted-set check
    per_set: int  # entries per set in its many-sets half
    sources: int  # accuracy workload
    windows: int
    on_redis: int  # sources also decided by the Lua limiters
    burst: int  # requests in a burst
    decisions: int  # per cost phase


FULL = Sizes((1, 10, 100, 1000), 1_000_000, 100, 10_000, 10, 100, 1000, 5000)
QUICK = Sizes((1, 10, 100), 10_000, 100, 300, 5, 20, 300, 300)


def study(server: RedisServer, sizes: Sizes, seed: int, kept: Histories) -> dict[str, Any]:
    """Every measurement on ``server``, its decisions on Redis recorded in ``kept``; the keys
    the study made are removed at the end."""
    began = time.monotonic()
    space = Space(server)
    try:
        version = space.client.info("server").get("redis_version")
        workload = Workload(sizes.sources, sizes.windows, seed=seed)
        measured = {
            "kind": "study",
            "sizes": asdict(sizes),
            "seed": seed,
            "redis": {"how": server.how, "detail": server.detail, "version": version},
            "chapter": [asdict(s) for s in SUBJECTS],
            "footnote": FOOTNOTE,
            "memory": {
                "per_identity": memory.per_identity(space, sizes.rates, kept),
                "sorted_set": memory.sorted_set(space, sizes.entries, sizes.per_set),
            },
            "accuracy": accuracy.compare(space, workload, LIMIT, sizes.on_redis, kept),
            "bursts": burst.bursts(space, sizes.burst, kept),
            "cost": cost.measure(space, sizes.decisions, kept),
        }
        measured["seconds"] = round(time.monotonic() - began, 1)
        return measured
    finally:
        space.close()


def write(run_dir: Path, measured: dict[str, Any], kept: Histories) -> Path:
    """``study.json``, and each history judged and kept beside it."""
    kept.keep(run_dir)
    path = run_dir / "study.json"
    with writing(path):
        path.write_text(json.dumps(measured, indent=1))
    return path
