"""Load verdicts over repeated runs: each limiter behind the default endpoint, four instances,
the default (bursting) traffic, ``--runs`` headless runs of ``--seconds`` each. Prints, per
limiter, in how many runs each kind of violation was found: the broken limiters of Part 7 must
be caught in every run, the atomic ones in none.

    .venv/bin/python bench/load_verdicts.py --runs 20 --seconds 5 [--json]

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

BROKEN = ("in-memory", "naive-get-set", "token-bucket-nonatomic")
CORRECT = (
    "fixed-window-lua",
    "sliding-log-lua",
    "sliding-counter-lua",
    "token-bucket-lua",
    "gcra-lua",
)


def one_run(limiter: str, seconds: float) -> tuple[int, set[str], int]:
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        command = [sys.executable, "-m", "ratelimit_harness", "load", "--limiter", limiter]
        command += ["--duration", str(seconds), "--instances", "4", "--json", out.name]
        code = subprocess.run(command, capture_output=True, check=False).returncode
        verdict = json.loads(Path(out.name).read_text()) if code in (0, 1) else {"rules": []}
    api = [r for r in verdict["rules"] if r["rule"] == "api"]
    kinds = {v["kind"] for r in api for v in r["server"]["violations"] if v["count"]}
    return code, kinds, sum(r["server"]["operations"] for r in api)


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--runs", type=int, default=20)
    options.add_argument("--seconds", type=float, default=5)
    options.add_argument("--limiters", nargs="*", default=[*BROKEN, *CORRECT])
    options.add_argument("--json", action="store_true", help="end with one JSON line")
    args = options.parse_args()
    rows = []
    print(
        f"{'limiter':26} {'runs':>4} {'exit 1':>6} {'decisions/run':>13}  violations found (runs)"
    )
    for limiter in args.limiters:
        codes: collections.Counter[int] = collections.Counter()
        found: collections.Counter[str] = collections.Counter()
        decisions = 0
        began = time.monotonic()
        for _ in range(args.runs):
            code, kinds, operations = one_run(limiter, args.seconds)
            codes[code] += 1
            found.update(kinds)
            decisions += operations
        shown = ", ".join(f"{kind} ({n})" for kind, n in sorted(found.items())) or "none"
        print(
            f"{limiter:26} {args.runs:>4} {codes[1]:>6} {decisions // args.runs:>13,}  {shown}"
            f"  [{time.monotonic() - began:.0f} s]",
            flush=True,
        )
        rows.append(
            {
                "measure": "load verdicts: runs with a violation",
                "what": limiter,
                "value": codes[1],
                "unit": f"of {args.runs}",
                "note": shown,
            }
        )
    if args.json:
        print(json.dumps({"bench": "load_verdicts", "rows": rows}))


if __name__ == "__main__":
    main()
