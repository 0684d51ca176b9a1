"""How fast the verdict engine judges a large history: operations per second, read and check.

Builds a valid history of N operations (default 1,000,000) from a reference model of the policy,
on K keys, with 8 processes and latencies of 0.2-3 ms, writes it as JSON Lines, then times
reading it and checking it (the best of ``--repeat`` runs each). Prints a table (``--json``:
then one JSON line of its rows, for bench/table.py); asserts only that the verdict is valid.
The goal: read and check 1,000,000 operations in under 2 s.

    .venv/bin/python bench/check_speed.py [--operations N] [--policy SPEC] [--repeat R] [--json]
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

from ratelimit_harness.harness.checkers import check
from ratelimit_harness.harness.history import Operation, Outcome
from ratelimit_harness.harness.history.jsonl import read_history, write_history
from ratelimit_harness.limiters import Policy
from ratelimit_harness.limiters.reference import Reference


def build(policy: Policy, operations: int, keys: int, seed: int) -> list[Operation]:
    rng = random.Random(seed)
    t = 1_700_000_000.0
    model = Reference(policy, clock=lambda: t)
    history = []
    for number in range(operations):
        t += rng.expovariate(2000)
        key = f"user:{rng.randrange(keys)}"
        before, after = rng.uniform(0.0001, 0.0015), rng.uniform(0.0001, 0.0015)
        decision = model.check(key)
        outcome = Outcome.ALLOWED if decision.allowed else Outcome.REJECTED
        # a leaky bucket's allowed operation is its departure, ``delay`` after its acceptance
        at = t + (decision.delay or 0.0) if decision.allowed else t
        history.append(Operation(f"app-{number % 8}", key, at - before, at + after, outcome, t))
    history.sort(key=lambda op: op.invoke)
    return history


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--operations", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=200)
    parser.add_argument("--policy", action="append", help="repeatable; default: every kind")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=1, help="best of this many runs")
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    args = parser.parse_args()
    specs = args.policy or [
        "fixed-window:limit=5,window=1",
        "fixed-window:limit=5,window=1,anchor=first",
        "sliding-window:limit=5,window=1",
        "sliding-counter:limit=5,window=1",
        "token-bucket:capacity=5,rate=5",
        "gcra:capacity=5,rate=5",
        "leaky-bucket:capacity=5,rate=5",
    ]
    print(f"{'policy':44} {'ops':>9} {'read s':>7} {'check s':>8} {'total s':>8} {'ops/s':>10}")
    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory() as folder:
        for spec in specs:
            policy = Policy.parse(spec)
            path = Path(folder, "history.jsonl")
            write_history(path, build(policy, args.operations, args.keys, args.seed))
            read, checked, operations = _best_of(args.repeat, path, policy)
            total = read + checked
            print(
                f"{spec:44} {operations:>9,} {read:>7.2f} {checked:>8.2f} {total:>8.2f} "
                f"{operations / total:>10,.0f}"
            )
            note = f"read {read:.2f} s + check {checked:.2f} s of {operations:,}"
            rows.append(
                {
                    "measure": "checker operations/s (read and check)",
                    "what": spec,
                    "value": operations / total,
                    "unit": "/s",
                    "note": note,
                    "read_s": read,
                    "check_s": checked,
                    "operations": operations,
                }
            )
    if args.json:
        print(json.dumps({"bench": "check_speed", "rows": rows}))


def _best_of(repeat: int, path: Path, policy: Policy) -> tuple[float, float, int]:
    """The fastest read and the fastest check of ``path`` in ``repeat`` runs (seconds), and the
    history's length. Exits if a verdict is not valid: the history comes from the reference."""
    reads, checks = [], []
    for _ in range(max(1, repeat)):
        started = time.perf_counter()
        history = read_history(path)
        reads.append(time.perf_counter() - started)
        started = time.perf_counter()
        verdict = check(history, policy)
        checks.append(time.perf_counter() - started)
        if not verdict.valid or verdict.inconclusive:
            raise SystemExit(f"a history from the reference model was judged {verdict.to_json()}")
    return min(reads), min(checks), len(history)


if __name__ == "__main__":
    main()
