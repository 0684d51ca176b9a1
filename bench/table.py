"""Every benchmark of bench/, one after another, and their figures in one table.

Each benchmark file, run with ``--json``, prints its own table and then, as its last line, one
JSON object: ``{"bench": name, "rows": [{"measure", "what", "value", "unit", "note"}, ...]}``.
This runs each in a process of its own (the code of this checkout first on the path), reads that
line, and prints the rows of all of them together. A benchmark that fails is a row saying so.

    .venv/bin/python bench/table.py [--quick] [--with-load-verdicts] [--only NAME ...]

``--quick`` runs each with smaller counts (a minute or two in all, for a first look);
``load_verdicts.py`` takes tens of minutes, so it runs only with ``--with-load-verdicts``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
WALL = "wall time of each benchmark"
# each benchmark and its arguments: as measured for docs/performance.md, and quick
BENCHES = {
    "decisions": ([], ["--count", "5000", "--rounds", "1"]),
    "check_speed": ([], ["--operations", "100000"]),
    "race_speed": (["--seeds", "2"], ["--seeds", "1", "--only", "naive-get-set"]),
    "race_test_time": ([], ["--jobs", "all"]),
    "schedule_rate": ([], ["--rounds", "1", "--limiter", "fixed-window-lua"]),
    "history_overhead": ([], ["--ops", "20000", "--lines", "100000", "--merge-ops", "10000"]),
    "load_speed": ([], ["--seconds", "2"]),
    "load_verdicts": (["--runs", "3"], ["--runs", "1", "--seconds", "2"]),
}


def run(name: str, args: list[str]) -> list[dict[str, Any]]:
    """The rows benchmark ``name`` reported, then its wall time; its own output passes
    through to stderr."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE.parent), os.environ.get("PYTHONPATH", "")]),
    }
    command = [sys.executable, str(HERE / f"{name}.py"), *args, "--json"]
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    print(done.stdout + done.stderr, file=sys.stderr)
    last = done.stdout.strip().splitlines()[-1:] or [""]
    if done.returncode != 0 or not last[0].startswith('{"bench"'):
        why = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return [row("failed", name, done.returncode, "exit code", why[:60])]
    rows: list[dict[str, Any]] = json.loads(last[0])["rows"]
    return [*rows, row(WALL, name, time.monotonic() - started, "s")]


def row(measure: str, what: str, value: float, unit: str, note: str = "") -> dict[str, Any]:
    return {"measure": measure, "what": what, "value": value, "unit": unit, "note": note}


def render(rows: list[dict[str, Any]]) -> str:
    width = max(len(r["what"]) for r in rows)
    lines, measure = [], None
    for r in rows:
        if r["measure"] != measure:
            measure = r["measure"]
            lines.append(f"\n{measure}")
        value = r["value"]
        shown = f"{value:,.0f}" if abs(value) >= 100 else f"{value:.2f}"
        lines.append(f"  {r['what']:<{width}} {shown:>12} {r['unit']:<8} {r['note']}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller counts, for a first look")
    parser.add_argument("--with-load-verdicts", action="store_true", help="tens of minutes")
    parser.add_argument("--only", nargs="+", choices=BENCHES, help="these benchmarks only")
    parser.add_argument("--json", metavar="OUT", help="also write the rows to OUT")
    args = parser.parse_args()
    chosen = args.only or [n for n in BENCHES if n != "load_verdicts" or args.with_load_verdicts]
    rows = []
    for name in chosen:
        print(f"== {name}", file=sys.stderr, flush=True)
        rows += run(name, BENCHES[name][1] if args.quick else BENCHES[name][0])
    print(
        render(
            [r for r in rows if r["measure"] != WALL] + [r for r in rows if r["measure"] == WALL]
        )
    )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
