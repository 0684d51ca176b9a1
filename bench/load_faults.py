"""Faults under load, over repeated runs: each fault of the load nemesis against each limiter,
``--runs`` headless runs of ``--seconds`` each (the ``outage`` traffic: many identities of their
own, so each fault meets counters being made), a fault every ``--every`` seconds lasting
``--lasting``. Prints, per fault and limiter: the runs that ended with a verdict, those whose
clients' requests were all judged (sent = judged), in how many runs each kind of violation was
found (header lies among them; an immortal key: a counter a fault left without a TTL; an
over-admission, or a broken promise of ``X-RateLimit-Remaining``, is told by whether a fault
fell in its window, an emptied Redis forgetting counts, or none did: the limiter's own), and
what the fault did (requests undecided, per fault on average; the longest time to decide
again).

Each run is a line of ``--record`` (a JSON-lines file, appended as each run ends) and a cell
already holding ``--runs`` runs of the same settings is not run again: a matrix too long for one
sitting is filled over several, and a killed bench loses one run at most. ``--recorded`` runs
nothing and reports the cells the record holds (``make bench`` so renders the docs' table).

    .venv/bin/python bench/load_faults.py --runs 20 --seconds 20 [--faults ...] [--limiters ...]

``--json`` ends the output with one JSON line of the figures.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ratelimit_harness.reports import checkout

FAULTS = (
    *("kill-redis", "restart-redis", "pause-redis", "kill-instance"),
    *("latency", "partition", "refuse", "skew", "failover"),
)
LIMITERS = ("fixed-window-lua", "token-bucket-lua", "fixed-window-incr-expire", "in-memory")
RECORD = Path(__file__).with_name("load_faults.jsonl")
SETTINGS = ("seconds", "every", "lasting", "users")


def one_run(fault: str, limiter: str, args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        command = [sys.executable, "-m", "ratelimit_harness", "load", "--limiter", limiter]
        command += ["--nemesis", fault, "--nemesis-every", str(args.every)]
        command += ["--nemesis-for", str(args.lasting), "--duration", str(args.seconds)]
        command += ["--locustfile", "outage", "--users", str(args.users)]
        command += ["--instances", "3", "--json", out.name]
        if fault == "failover":  # a shard's replica takes over: a cluster of its own
            command.append("--cluster")
        began = time.monotonic()
        code = subprocess.run(command, capture_output=True, check=False).returncode
        took = round(time.monotonic() - began, 1)
        text = Path(out.name).read_text()
    run: dict[str, Any] = {"fault": fault, "limiter": limiter, "code": code, "took": took}
    run |= {name: getattr(args, name) for name in SETTINGS} | provenance()
    verdict = json.loads(text) if code in (0, 1) and text else None
    if verdict is None:
        return run | {"verdict": False}
    (api,) = [r for r in verdict["rules"] if r["rule"] == "api"]
    effects = [f["effects"]["api"] for f in verdict["faults"] if "api" in f["effects"]]
    recoveries = [e["recovery"] for e in effects if e["recovery"] is not None]
    over = sum(v["count"] for v in api["server"]["violations"] if v["kind"] == "over-admission")
    in_faults = sum(e["over_admitted"] for e in effects)
    lies = sum(api["header_lies"].values())
    broken_in_faults = sum(e["promises_broken"] for e in effects)
    return run | {
        "verdict": True,
        "whole": verdict["sent"] == verdict["judged"],
        "kinds": sorted(
            {v["kind"] for v in api["server"]["violations"] if v["count"]}
            | ({"header-lies"} if any(api["header_lies"].values()) else set())
        ),
        "over_in_faults": min(over, in_faults),
        "over_own": max(0, over - in_faults),
        "lies_own": max(0, lies - broken_in_faults),  # broken promises no fault explains, too
        "faults": len(verdict["faults"]),
        "undecided": sum(e["undecided"] for e in effects) / max(1, len(effects)),
        "lost": sum(e["lost"] for e in effects),
        "recovery": max(recoveries, default=None),
    }


def provenance() -> dict[str, str]:
    """When and on which commit a run was made (``+`` after it: with uncommitted changes)."""
    date = datetime.datetime.now(datetime.UTC).date().isoformat()
    return {"date": date, "commit": checkout.commit() + ("+" if checkout.code_changed() else "")}


def recorded(path: Path) -> Iterator[dict[str, Any]]:
    """The runs the record holds; a line torn by a killed bench is skipped."""
    if not path.exists():
        return
    for line in path.read_text().splitlines():
        try:
            yield json.loads(line)
        except ValueError:
            continue


def summary(runs: list[dict[str, Any]], args: argparse.Namespace) -> dict[str, Any]:
    fault, limiter = runs[0]["fault"], runs[0]["limiter"]
    judged = [r for r in runs if r["verdict"]]
    found = collections.Counter(kind for r in judged for kind in r["kinds"])
    recoveries = [r["recovery"] for r in judged if r["recovery"] is not None]
    return {
        "measure": "faults under load",
        "what": f"{fault} / {limiter}",
        "value": len(judged),
        "unit": f"of {len(runs)} runs ended with a verdict",
        "note": f"{args.seconds:g} s each, a fault every {args.every:g} s for "
        f"{args.lasting:g} s, {args.users} users of the outage pattern",
        "fault": fault,
        "limiter": limiter,
        "runs": len(runs),
        "whole": sum(1 for r in judged if r["whole"]),
        "found": dict(found),
        "own_runs": {  # per kind, the runs where some of it was in no fault's window
            "over-admission": sum(1 for r in judged if r["over_own"]),
            "header-lies": sum(1 for r in judged if r["lies_own"]),
        },
        "undecided_per_fault": round(sum(r["undecided"] for r in judged) / max(1, len(judged)), 1),
        "lost": sum(r["lost"] for r in judged),
        "recovery_max": max(recoveries, default=None),
        "dates": sorted({r.get("date", "") for r in runs} - {""}),
        "commits": sorted({r.get("commit", "") for r in runs} - {""}),
    }


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--runs", type=int, default=20)
    options.add_argument("--seconds", type=int, default=20)
    options.add_argument("--every", type=float, default=2.0)
    options.add_argument("--lasting", type=float, default=0.5)
    options.add_argument("--users", type=int, default=200)
    options.add_argument("--faults", nargs="*", default=list(FAULTS), choices=FAULTS)
    options.add_argument("--limiters", nargs="*", default=list(LIMITERS))
    options.add_argument("--record", type=Path, default=RECORD, help="the runs, one a line")
    options.add_argument(
        "--recorded", action="store_true", help="run nothing: report the record as it stands"
    )
    options.add_argument("--json", action="store_true", help="end with one JSON line")
    args = options.parse_args()
    same = {name: getattr(args, name) for name in SETTINGS}
    cells: dict[tuple[str, str], list[dict[str, Any]]] = collections.defaultdict(list)
    for run in recorded(args.record):
        if all(run.get(name) == value for name, value in same.items()):
            cells[run["fault"], run["limiter"]].append(run)
    print(
        f"{'fault':14} {'limiter':26} verdicts  whole  found (runs)                       "
        "undecided/fault  lost  recovery max"
    )
    rows = []
    for fault in args.faults:
        for limiter in args.limiters:
            runs = cells[fault, limiter]
            while len(runs) < args.runs and not args.recorded:
                runs.append(one_run(fault, limiter, args))
                with args.record.open("a") as out:
                    out.write(json.dumps(runs[-1]) + "\n")
                done = runs[-1]
                print(
                    f"  {fault} / {limiter}: run {len(runs)} of {args.runs}, exit {done['code']} "
                    f"in {done['took']:g} s",
                    file=sys.stderr,
                    flush=True,
                )
            if not runs:
                continue
            row = summary(runs[: args.runs], args)
            rows.append(row)
            found = row["found"]
            shown = ", ".join(f"{k} {n}" for k, n in sorted(found.items())) or "none"
            own = [f"{kind} {n}" for kind, n in row["own_runs"].items() if found.get(kind)]
            if own:
                shown += f" (not a fault's: {', '.join(own)})"
            recovery = "-" if row["recovery_max"] is None else f"{row['recovery_max']:.2f} s"
            print(
                f"{fault:14} {limiter:26} {row['value']:>3}/{args.runs:<4} {row['whole']:>5}  "
                f"{shown:34} {row['undecided_per_fault']:>15} {row['lost']:>5}  {recovery}",
                flush=True,
            )
    if args.json:
        print(json.dumps({"bench": "load_faults", "rows": rows}))


if __name__ == "__main__":
    main()
