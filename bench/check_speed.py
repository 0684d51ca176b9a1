"""How fast the verdict engine judges a large history: operations per second, read and check.

Builds a valid history of N operations (default 1,000,000) from a reference model of the policy,
on K keys, with 8 processes and latencies of 0.2-3 ms, writes it as JSON Lines, then times
reading it and checking it. Prints the figures (``--json``: and one JSON line of them); asserts
only that the verdict is valid.

    .venv/bin/python bench/check_speed.py [--operations N] [--policy SPEC] [--json]
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

from harness.checkers import check
from harness.history import Operation, Outcome
from harness.history.jsonl import read_history, write_history
from limiters import Policy
from limiters.reference import Reference


def build(policy: Policy, operations: int, keys: int, seed: int) -> list[Operation]:
    rng = random.Random(seed)
    t = 1_700_000_000.0
    model = Reference(policy, clock=lambda: t)
    history = []
    for number in range(operations):
        t += rng.expovariate(2000)
        key = f"user:{rng.randrange(keys)}"
        before, after = rng.uniform(0.0001, 0.0015), rng.uniform(0.0001, 0.0015)
        outcome = Outcome.ALLOWED if model.check(key).allowed else Outcome.REJECTED
        history.append(Operation(f"app-{number % 8}", key, t - before, t + after, outcome, t))
    history.sort(key=lambda op: op.invoke)
    return history


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--operations", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=200)
    parser.add_argument("--policy", action="append", help="repeatable; default: four kinds")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    args = parser.parse_args()
    rows = []
    specs = args.policy or [
        "fixed-window:limit=5,window=1",
        "sliding-window:limit=5,window=1",
        "token-bucket:capacity=5,rate=5",
        "sliding-counter:limit=5,window=1",
    ]
    print(f"{'policy':36} {'ops':>9} {'read s':>7} {'check s':>8} {'check ops/s':>12}  verdict")
    with tempfile.TemporaryDirectory() as folder:
        for spec in specs:
            policy = Policy.parse(spec)
            path = Path(folder, "history.jsonl")
            write_history(path, build(policy, args.operations, args.keys, args.seed))
            started = time.perf_counter()
            history = read_history(path)
            read = time.perf_counter() - started
            started = time.perf_counter()
            verdict = check(history, policy)
            checked = time.perf_counter() - started
            result = "valid" if verdict.valid else "INVALID"
            if verdict.inconclusive:
                result += f", {len(verdict.inconclusive)} inconclusive"
            print(
                f"{spec:36} {len(history):>9,} {read:>7.2f} {checked:>8.2f} "
                f"{len(history) / checked:>12,.0f}  {result}"
            )
            if not verdict.valid:
                raise SystemExit("a history from the reference model was judged invalid")
            note = f"read {read:.2f} s + check {checked:.2f} s of {len(history):,}; {result}"
            rows.append(
                {
                    "measure": "checker operations/s",
                    "what": spec,
                    "value": len(history) / checked,
                    "unit": "/s",
                    "note": note,
                }
            )
    if args.json:
        print(json.dumps({"bench": "check_speed", "rows": rows}))


if __name__ == "__main__":
    main()
