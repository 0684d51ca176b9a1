"""How the verdict engine scales: a history of 1 M, 10 M and 100 M operations judged whole (read
into memory, then ``check``) and in parts (``check_file``: routed by key to part files, each part
judged by a worker), each in a process of its own: operations per second and peak memory.

The history is one million operations of ``check_speed.build`` (a reference model's decisions
on 200 identities, 2,000 requests a second) written again for each further million with its
identities renamed: each million brings 200 new identities, as a long run whose users come and
go does, so the busiest identity keeps 5,000 operations. Peak memory is the largest resident set
of the judging process (``self``) and of any one worker (``worker``). Judging whole needs about
430 bytes an operation, so it is measured up to ``--whole-up-to`` operations (default 10 M).
Asserts only that both ways give the same verdict.

The second table is one identity hammered: ``--busy`` operations (default 1 M and 10 M) of a
single identity, a million of ``check_speed.build`` written again for each further million a
thousand seconds later. Judged in parts, its operations are streamed (``streamed_identity``);
``held whole`` judges it in parts with the stream turned off, as before it was built, up to
``--whole-up-to`` operations.

    .venv/bin/python bench/check_scale.py [--operations 1000000,10000000,100000000]
        [--busy 1000000,10000000] [--policy SPEC] [--json]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from check_speed import build  # siblings: their folder is first on the path
from own_process import header, measured, scale_row

from ratelimit_harness.harness.history import Operation
from ratelimit_harness.harness.history.jsonl import format_operation, write_history
from ratelimit_harness.limiters import Policy

POLICY = "fixed-window:limit=5,window=1"
MILLION = 1_000_000

# run in a fresh process (own_process), so that one measure's memory is not the next one's
JUDGE = """
import sys, time
from ratelimit_harness.harness.checkers import check
from ratelimit_harness.harness.checkers.partitions import check_file
from ratelimit_harness.harness.history import read_history
from ratelimit_harness.limiters import Policy
path, policy, how = sys.argv[1], Policy.parse(sys.argv[2]), sys.argv[3]
if how == "held":  # the busy identity held whole in a part, as before it could be streamed
    import ratelimit_harness.harness.checkers.partitions as partitions
    partitions.streamable = lambda policy: False
started = time.perf_counter()
verdict = check(read_history(path), policy) if how == "whole" else check_file(path, policy)
result = {"seconds": time.perf_counter() - started, "operations": verdict.operations,
          "verdict": {v.kind: v.count for v in verdict.violations}}
"""


def write_scaled(base: bytes, copies: int, path: Path) -> None:
    """``copies`` times the history ``base``, each copy's identities renamed."""
    with open(path, "wb") as out:
        for copy in range(copies):
            out.write(base.replace(b'"key": "user:', b'"key": "user:%d-' % copy))


def write_busy(base: list[Operation], copies: int, path: Path) -> None:
    """``copies`` times the one identity's history ``base``, each a thousand seconds later."""
    with open(path, "w") as out:
        for copy in range(copies):
            late = copy * 1000.0
            out.writelines(
                format_operation(
                    op._replace(
                        invoke=op.invoke + late,
                        complete=None if op.complete is None else op.complete + late,
                        now=None if op.now is None else op.now + late,
                    )
                )
                for op in base
            )


def judged_both_ways(
    path: Path, policy: str, hows: list[str], size: int, what: str
) -> list[dict[str, object]]:
    """Each way of ``hows`` measured on ``path``; exits if their verdicts differ."""
    rows, verdicts = [], []
    for how in hows:
        started = time.perf_counter()
        found = measured(JUDGE, str(path), policy, how)
        verdicts.append(found["verdict"])
        row = scale_row(f"check {what}{how}: operations/s", "operations", how, found)
        row["note"] += f"; {time.perf_counter() - started:.0f} s with its process"
        rows.append(row)
    if any(verdict != verdicts[0] for verdict in verdicts):
        raise SystemExit(f"{size:,} operations judged {' and '.join(hows)} differ: {verdicts}")
    return rows


def _counts(text: str) -> list[int]:
    """``1000000,10000000`` as numbers; none for an empty text."""
    return [int(n) for n in text.split(",")] if text else []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--operations", default="1000000,10000000,100000000")
    parser.add_argument("--busy", default="1000000,10000000")
    parser.add_argument("--policy", default=POLICY, help=f"default: {POLICY}")
    parser.add_argument("--whole-up-to", type=int, default=10 * MILLION)
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    args = parser.parse_args()
    sizes, busy = _counts(args.operations), _counts(args.busy)
    rows: list[dict[str, object]] = []
    print(header("operations", "ops/s"))
    with tempfile.TemporaryDirectory(prefix="check-scale-") as folder:
        base_path = Path(folder, "base.jsonl")
        unit = min([MILLION, *sizes])
        policy = Policy.parse(args.policy)
        if sizes:
            write_history(base_path, build(policy, unit, 200, 1))
        base = base_path.read_bytes() if sizes else b""
        for size in sizes:
            path = Path(folder, "history.jsonl")
            write_scaled(base, max(1, size // unit), path)
            hows = ["whole", "parts"] if size <= args.whole_up_to else ["parts"]
            rows += judged_both_ways(path, args.policy, hows, size, "")
            path.unlink()
        if busy:
            print("one identity hammered:")
            one = build(policy, min([MILLION, *busy]), 1, 1)
        for size in busy:
            path = Path(folder, "busy.jsonl")
            write_busy(one, max(1, size // len(one)), path)
            hows = ["parts", "held"] if size <= args.whole_up_to else ["parts"]
            rows += judged_both_ways(path, args.policy, hows, size, "one identity ")
            path.unlink()
    if args.json:
        print(json.dumps({"bench": "check_scale", "rows": rows}))


if __name__ == "__main__":
    main()
