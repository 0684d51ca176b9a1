"""Faults under load, over repeated runs: each fault of the load nemesis against each limiter,
``--runs`` headless runs of ``--seconds`` each (the ``outage`` traffic: many identities of their
own, so each fault meets counters being made), a fault every ``--every`` seconds lasting
``--lasting``. Prints, per fault and limiter: the runs that ended with a verdict, those whose
clients' requests were all judged (sent = judged), in how many runs each kind of violation was
found (an immortal key: a counter a fault left without a TTL), and what the fault did (requests
undecided, per fault on average; the longest time to decide again).

    .venv/bin/python bench/load_faults.py --runs 20 --seconds 20 [--faults ...] [--json]

``--json`` ends the output with one JSON line of the figures.
"""

from __future__ import annotations

import argparse
import collections
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

FAULTS = ("kill-redis", "kill-instance", "partition", "skew")
LIMITERS = ("fixed-window-lua", "token-bucket-lua", "fixed-window-incr-expire", "in-memory")


def one_run(fault: str, limiter: str, args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        command = [sys.executable, "-m", "harness", "load", "--limiter", limiter]
        command += ["--nemesis", fault, "--nemesis-every", str(args.every)]
        command += ["--nemesis-for", str(args.lasting), "--duration", str(args.seconds)]
        command += ["--locustfile", "outage", "--users", str(args.users)]
        command += ["--instances", "3", "--json", out.name]
        code = subprocess.run(command, capture_output=True, check=False).returncode
        text = Path(out.name).read_text()
    verdict = json.loads(text) if code in (0, 1) and text else None
    if verdict is None:
        return {"code": code, "verdict": False}
    (api,) = [r for r in verdict["rules"] if r["rule"] == "api"]
    effects = [f["effects"]["api"] for f in verdict["faults"] if "api" in f["effects"]]
    recoveries = [e["recovery"] for e in effects if e["recovery"] is not None]
    return {
        "code": code,
        "verdict": True,
        "whole": verdict["sent"] == verdict["judged"],
        "kinds": sorted({v["kind"] for v in api["server"]["violations"] if v["count"]}),
        "faults": len(verdict["faults"]),
        "undecided": sum(e["undecided"] for e in effects) / max(1, len(effects)),
        "lost": sum(e["lost"] for e in effects),
        "recovery": max(recoveries, default=None),
    }


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--runs", type=int, default=20)
    options.add_argument("--seconds", type=float, default=20)
    options.add_argument("--every", type=float, default=2.0)
    options.add_argument("--lasting", type=float, default=0.5)
    options.add_argument("--users", type=int, default=200)
    options.add_argument("--faults", nargs="*", default=list(FAULTS))
    options.add_argument("--limiters", nargs="*", default=list(LIMITERS))
    options.add_argument("--json", action="store_true", help="end with one JSON line")
    args = options.parse_args()
    rows = []
    print(
        f"{'fault':14} {'limiter':26} verdicts  whole  found (runs)                       "
        "undecided/fault  lost  recovery max"
    )
    for fault in args.faults:
        for limiter in args.limiters:
            began = time.perf_counter()
            runs = [one_run(fault, limiter, args) for _ in range(args.runs)]
            judged = [r for r in runs if r["verdict"]]
            found = collections.Counter(kind for r in judged for kind in r["kinds"])
            recoveries = [r["recovery"] for r in judged if r["recovery"] is not None]
            row = {
                "measure": "faults under load",
                "what": f"{fault} / {limiter}",
                "value": len(judged),
                "unit": f"of {args.runs} runs ended with a verdict",
                "note": f"{args.seconds:g} s each, a fault every {args.every:g} s for "
                f"{args.lasting:g} s, {args.users} users of the outage pattern",
                "fault": fault,
                "limiter": limiter,
                "runs": args.runs,
                "whole": sum(1 for r in judged if r["whole"]),
                "found": dict(found),
                "undecided_per_fault": round(
                    sum(r["undecided"] for r in judged) / max(1, len(judged)), 1
                ),
                "lost": sum(r["lost"] for r in judged),
                "recovery_max": max(recoveries, default=None),
                "seconds": round(time.perf_counter() - began, 1),
            }
            rows.append(row)
            shown = ", ".join(f"{k} {n}" for k, n in sorted(found.items())) or "none"
            recovery = "-" if row["recovery_max"] is None else f"{row['recovery_max']:.2f} s"
            print(
                f"{fault:14} {limiter:26} {len(judged):>3}/{args.runs:<4} {row['whole']:>5}  "
                f"{shown:34} {row['undecided_per_fault']:>15} {row['lost']:>5}  {recovery}",
                flush=True,
            )
    if args.json:
        print(json.dumps({"bench": "load_faults", "rows": rows}))


if __name__ == "__main__":
    main()
