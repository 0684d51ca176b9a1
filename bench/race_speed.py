"""How fast the race explorer finds and shrinks each flaw of the catalogue, over several seeds.

For every flaw that race-test searches for (and the boundary attack), one search per seed,
stopping at the first find: which stage found it, schedules and seconds to the find, seconds
with shrinking, actions left after shrinking. Each row ends with the ratio of its slowest
search to the issue's goal: a race the bounded stage finds (interleavings, a crash between two
commands, a stall) must be found in under 1 s, one that needs clock skew found and shrunk in
under 20 s. A ratio under 1 meets the goal.

    .venv/bin/python bench/race_speed.py [--seeds N] [--only NAME] [--redis embedded] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from typing import Any

from ratelimit_harness.harness.explorer.campaign import (
    FLAW_BUDGET,
    PROFILES,
    Target,
    shows,
    targets,
)
from ratelimit_harness.harness.explorer.schedule.run import Setup
from ratelimit_harness.harness.explorer.search.explore import Exploration, explore
from ratelimit_harness.harness.provision import provision
from ratelimit_harness.limiters import Policy

GOALS = {"bounded": 1.0, "search": 20.0}  # seconds: to find; to find and shrink


def searches(target: Target, url: str, seeds: int) -> dict[str, list[Exploration]]:
    judged_by = Policy.parse(target.judged_by) if target.judged_by else None
    setup = Setup(target.limiter, Policy.parse(target.policy), 2, url, judged_by)
    budget = PROFILES["quick"] * FLAW_BUDGET
    return {
        flaw: [
            explore(setup, wanted=shows(flaw), max_examples=budget, seed=seed)
            for seed in range(seeds)
        ]
        for flaw in target.expected
    }


def summary(runs: list[Exploration]) -> dict[str, Any]:
    """The figures of one flaw's searches, one per seed."""
    found = [run for run in runs if run.found is not None] or runs
    stages = "+".join(sorted({run.stage for run in found})) or "-"
    to_find = [run.seconds_to_find for run in found]
    in_all = [run.seconds for run in found]
    slowest = max(to_find) if stages == "bounded" else max(in_all)
    actions = [len(run.found.actions) for run in found if run.found is not None]
    return {
        "stages": stages,
        "schedules": [run.examples_to_find for run in found],
        "to_find": to_find,
        "in_all": in_all,
        "actions": (min(actions, default=0), max(actions, default=0)),
        "missed": sum(1 for run in runs if run.found is None),
        "ratio": slowest / GOALS.get(stages, GOALS["search"]),
    }


def row(label: str, flaw: str, figures: dict[str, Any]) -> str:
    schedules, to_find, in_all = figures["schedules"], figures["to_find"], figures["in_all"]
    fewest, most = figures["actions"]
    return (
        f"{label[:34]:34} {flaw:18} {figures['stages']:12} {statistics.median(schedules):6.0f} "
        f"{max(schedules):5} {statistics.median(to_find):7.2f} {statistics.median(in_all):7.2f} "
        f"{max(in_all):7.2f} {fewest:3}-{most:<3} {figures['missed']:6} {figures['ratio']:6.3f}"
    )


def json_row(label: str, flaw: str, figures: dict[str, Any]) -> dict[str, Any]:
    note = (
        f"{figures['stages']}, {statistics.median(figures['schedules']):.0f} schedules, "
        f"x{figures['ratio']:.2f} of the goal, {figures['missed']} missed"
    )
    return {
        "measure": "explorer: median seconds to find a flaw",
        "what": f"{label} {flaw}",
        "value": statistics.median(figures["to_find"]),
        "unit": "s",
        "note": note,
        "limiter": label,
        "flaw": flaw,
        "stages": figures["stages"],
        "schedules": statistics.median(figures["schedules"]),
        "with_shrinking": max(figures["in_all"]),
        "actions": list(figures["actions"]),
        "missed": figures["missed"],
        "ratio": figures["ratio"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--only", help="one limiter of the catalogue")
    parser.add_argument("--redis", choices=("auto", "container", "embedded"), default=None)
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    args = parser.parse_args()
    chosen = [t for t in targets() if t.expected and args.only in (None, t.limiter)]
    if not chosen:
        sys.exit(f"error: no flaw to search for in {args.only!r}")
    print(
        f"{'limiter':34} {'flaw':18} {'found by':12} {'sched':>6} {'max':>5} {'find s':>7} "
        f"{'total s':>7} {'max s':>7} {'actions':7} {'missed':>6} {'/ goal':>6}"
    )
    rows = []
    with provision(args.redis) as server:
        for target in chosen:
            for flaw, runs in searches(target, server.url, args.seeds).items():
                figures = summary(runs)
                print(row(target.label, flaw, figures), flush=True)
                rows.append(json_row(target.label, flaw, figures))
    if args.json:
        print(json.dumps({"bench": "race_speed", "rows": rows}))


if __name__ == "__main__":
    main()
