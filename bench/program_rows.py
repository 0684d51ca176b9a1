"""What racing a limiter as an OS process costs: a JavaScript race-test row against its Python
twin, the same searches on the same seed, on the explorer's own server (virtual time).

Each row of ``--rows`` (the chapter's programs, ``limiters.js_catalogue``) is raced as
``race-test`` races it (``campaign.run_row``: one search per expected flaw, each shrunk and its
trace replayed; no naive stress), then its twin, the Python catalogue entry of the same code,
the same way, in turns for ``--repeat`` rounds (so that a shared machine's swings move both
alike), the best of each kept. Prints each row's seconds and schedules, the twin's, and the
ratio of the two (``--json``: and one JSON line of it). Exits 1 when a row's verdict does not
match what the catalogue expects (a faster row that judges otherwise is no gain); asserts
nothing about time.

    .venv/bin/python bench/program_rows.py [--rows fixed-window-incr-expire naive-get-set]
                                           [--seed 1] [--repeat 2] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from ratelimit_harness.harness.explorer.campaign import (
    PROFILES,
    Target,
    js_targets,
    run_row,
    targets,
)
from ratelimit_harness.harness.explorer.instances.process import POOL
from ratelimit_harness.harness.history.races import RaceTestRow
from ratelimit_harness.harness.provision import provision_explorer
from ratelimit_harness.limiters.js_catalogue import JS_CATALOGUE, unavailable

ROWS = ["fixed-window-incr-expire", "naive-get-set"]


def raced(target: Target, url: str, clock_file: str, seed: int, out: Path) -> RaceTestRow:
    try:
        return run_row(
            target,
            stress_seconds=0,
            url=url,
            clock_file=clock_file,
            instances=2,
            max_examples=PROFILES["quick"],
            seed=seed,
            out_dir=out,
            on_example=lambda _: None,
        )
    finally:
        POOL.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", nargs="+", default=ROWS, choices=sorted(JS_CATALOGUE))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=2, help="rounds; the best of each kept")
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    args = parser.parse_args()
    missing = unavailable()
    if missing:
        print(f"program_rows: {missing}", file=sys.stderr)
        sys.exit(2)
    programs = {target.label: target for target in js_targets()}
    twins = {target.label: target for target in targets()}
    results, matched = [], True
    print(f"{'row':<28} {'js s':>7} {'schedules':>9} {'twin s':>7} {'schedules':>9} {'ratio':>6}")
    with provision_explorer() as server, tempfile.TemporaryDirectory() as out:
        for name in args.rows:
            place = (server.url, server.clock_file, args.seed, Path(out))
            rounds = [
                (
                    raced(programs[f"{name}.js"], *place),
                    raced(twins[JS_CATALOGUE[name].twin], *place),
                )
                for _ in range(max(1, args.repeat))
            ]
            js = min((each for each, _ in rounds), key=lambda row: row.seconds)
            twin = min((each for _, each in rounds), key=lambda row: row.seconds)
            matched &= all(each.matches and other.matches for each, other in rounds)
            ratio = js.seconds / twin.seconds
            verdicts = "" if matched else "  VERDICT MISMATCH"
            print(
                f"{name + '.js':<28} {js.seconds:>7.1f} {js.examples:>9} {twin.seconds:>7.1f} "
                f"{twin.examples:>9} {ratio:>6.2f}{verdicts}"
            )
            note = f"{js.examples} schedules, its twin {twin.examples} in {twin.seconds:.1f} s"
            results.append(_row(f"{name}.js", ratio, note, js, twin))
    if args.json:
        print(json.dumps({"bench": "program_rows", "rows": results}))
    sys.exit(0 if matched else 1)


def _row(what: str, ratio: float, note: str, js: RaceTestRow, twin: RaceTestRow) -> dict[str, Any]:
    return {
        "measure": "a JavaScript row's time over its Python twin's",
        "what": what,
        "value": ratio,
        "unit": "x",
        "note": note,
        "seconds": js.seconds,
        "twin_seconds": twin.seconds,
        "matches": js.matches and twin.matches,
    }


if __name__ == "__main__":
    main()
