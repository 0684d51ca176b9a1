"""Every benchmark of bench/, one after another: their figures in one table and in one file.

Each benchmark file, run with ``--json``, prints its own table and then, as its last line, one
JSON object: ``{"bench": name, "rows": [{"measure", "what", "value", "unit", "note", ...}]}``
(a row may carry more fields, for the docs). This runs each in a process of its own (the code of
this checkout first on the path), reads that line, and prints the rows of all of them together.
A benchmark that fails is a row saying so, and the run then exits 1.

    .venv/bin/python bench/table.py [--quick] [--with-load-verdicts] [--only NAME ...]

Where the figures go. A full run (the default, ``make bench``) writes them to
``bench/results.json``, which is committed, then renders the docs' figure blocks from it (``python
-m ratelimit_harness.reports.bench_docs``). ``--quick`` runs each with smaller counts (a minute or
two in all, for a first look) and writes ``bench/results-quick.json`` instead, which is not
committed: a quick look never replaces the full figures or touches the docs. ``--results FILE``
writes to FILE and leaves the docs alone.

The file holds one entry per benchmark; a run replaces the entries of the benchmarks it ran and
keeps the others, so ``--only NAME`` measures NAME again and a benchmark that failed keeps its
last figures. ``{"benches": {name: entry}}``, in the order of ``BENCHES``, each entry:

- ``date`` (UTC) and ``commit`` (``git rev-parse --short HEAD``) it was measured on, and
  ``dirty``: whether files other than the docs (``*.md``) and these results differed from it;
- ``quick`` and ``arguments``: how the benchmark was run (``[]``: its own defaults);
- ``machine``: ``cores``; ``load``, the 1-minute load average before the run began (the work
  of others, on a shared machine); ``python``; and ``servers``: the versions of the
  ``embedded`` Redis, the explorer's (on virtual time) and the ``default`` one (and how started);
- ``seconds`` (its wall time) and ``rows`` (its JSON line's).

``load_verdicts.py`` takes tens of minutes, so it runs only with ``--with-load-verdicts``;
``load_faults.py`` takes hours, so its record (``bench/load_faults.jsonl``) is filled by running
it by hand, over several sittings if need be; here it only reports the record
(``--recorded``), and ``--quick`` makes one short run on a record of its own
(``bench/load_faults-quick.jsonl``, not committed).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import redis

from ratelimit_harness.harness.provision import RedisServer, provision, provision_explorer
from ratelimit_harness.reports import checkout
from ratelimit_harness.reports.bench_docs import rewrite

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results.json"  # the docs' figures
QUICK_RESULTS = HERE / "results-quick.json"  # not committed
WALL = "wall time of each benchmark"
# each benchmark and its arguments: full (for the docs), and quick
BENCHES = {
    "decisions": ([], ["--count", "5000", "--rounds", "1"]),
    "check_speed": ([], ["--operations", "100000"]),
    "check_scale": ([], ["--operations", "200000,1000000", "--busy", "200000"]),
    "race_speed": (["--seeds", "2"], ["--seeds", "1", "--only", "naive-get-set"]),
    "race_test_time": ([], ["--jobs", "all"]),
    "schedule_rate": ([], ["--rounds", "1", "--limiter", "fixed-window-lua"]),
    "history_overhead": ([], ["--ops", "20000", "--lines", "100000", "--merge-ops", "10000"]),
    "load_speed": (["--seconds", "10", "--rounds", "3"], ["--seconds", "2", "--rounds", "1"]),
    "proxy_latency": ([], ["--commands", "1000", "--repeat", "2"]),
    "fault_proxy_latency": ([], ["--commands", "1000", "--repeat", "2"]),
    "program_rows": ([], ["--rows", "naive-get-set", "--repeat", "1"]),
    "load_verdicts": (["--runs", "3"], ["--runs", "1", "--seconds", "2"]),
    "load_faults": (
        ["--recorded"],
        [
            *("--runs", "1", "--seconds", "3", "--faults", "kill-redis"),
            *("--limiters", "in-memory", "--record", str(HERE / "load_faults-quick.jsonl")),
        ],
    ),
}
Row = dict[str, Any]


def run(name: str, args: list[str]) -> tuple[list[Row], float] | None:
    """The rows benchmark ``name`` reported and its wall time, or None when it failed (then the
    last line of its stderr says why); its own output passes through to stderr."""
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
        print(f"{name} failed (exit code {done.returncode}): {why}", file=sys.stderr)
        return None
    return json.loads(last[0])["rows"], time.monotonic() - started


def row(measure: str, what: str, value: float, unit: str, note: str = "") -> Row:
    return {"measure": measure, "what": what, "value": value, "unit": unit, "note": note}


def render(rows: list[Row]) -> str:
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


def server_version(server: RedisServer) -> str:
    """``Redis 7.0.15``, ``Valkey 9.1.2``: the server's name and version, as INFO says."""
    info = redis.Redis.from_url(server.url).info("server")
    name = str(info.get("server_name", "redis"))
    return f"{name.capitalize()} {info.get(f'{name}_version', info['redis_version'])}"


def machine() -> dict[str, Any]:
    """The cores, how busy they were, Python, and the servers the benchmarks use: the embedded
    one, the explorer's, and the one ``provision()`` picks when told nothing (``load``'s,
    ``race_speed``'s)."""
    load = round(os.getloadavg()[0], 1)  # before this run starts anything: other work
    with provision("embedded") as embedded, provision_explorer() as explorer:
        servers = {"embedded": server_version(embedded), "explorer": server_version(explorer)}
    with provision() as default:
        servers["default"] = f"{server_version(default)} ({default.how})"
    return {
        "cores": os.cpu_count(),
        "load": load,
        "python": platform.python_version(),
        "servers": servers,
    }


def provenance(today: datetime.date, quick: bool) -> dict[str, Any]:
    """What every entry of this run shares: when, on which commit and machine, how."""
    return {
        "date": today.isoformat(),
        "commit": checkout.commit(),
        "dirty": checkout.code_changed(),
        "quick": quick,
        "machine": machine(),
    }


def save(path: Path, measured: dict[str, dict[str, Any]]) -> None:
    """Write ``measured``'s entries into the results file at ``path``, keeping the entries of
    benchmarks not measured this time."""
    kept = json.loads(path.read_text())["benches"] if path.exists() else {}
    benches = {**kept, **measured}
    ordered = {name: benches[name] for name in [*BENCHES, *benches] if name in benches}
    path.write_text(json.dumps({"benches": ordered}, indent=1, ensure_ascii=False) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller counts, for a first look")
    parser.add_argument("--with-load-verdicts", action="store_true", help="tens of minutes")
    parser.add_argument("--only", nargs="+", choices=BENCHES, help="these benchmarks only")
    parser.add_argument("--results", type=Path, help="write the figures here, not to bench/")
    args = parser.parse_args()
    chosen = args.only or [n for n in BENCHES if n != "load_verdicts" or args.with_load_verdicts]
    shared = provenance(datetime.datetime.now(datetime.UTC).date(), args.quick)
    rows: list[Row] = []
    walls: list[Row] = []
    measured: dict[str, dict[str, Any]] = {}
    for name in chosen:
        print(f"== {name}", file=sys.stderr, flush=True)
        arguments = BENCHES[name][1] if args.quick else BENCHES[name][0]
        result = run(name, arguments)
        if result is None:
            rows.append(row("failed", name, 1, "", "its last figures are kept"))
            continue
        figures, seconds = result
        rows += figures
        walls.append(row(WALL, name, seconds, "s"))
        measured[name] = {**shared, "arguments": arguments, "seconds": seconds, "rows": figures}
    print(render(rows + walls))
    path = args.results or (QUICK_RESULTS if args.quick else RESULTS)
    save(path, measured)
    print(f"\nfigures written to {path}")
    if path == RESULTS:
        for page in rewrite(HERE.parent):
            print(f"rewrote the figures of {page.relative_to(HERE.parent)}")
    sys.exit(1 if len(measured) < len(chosen) else 0)


if __name__ == "__main__":
    main()
