"""What partial-order reduction saves the bounded stage: schedules to exhaust a bound, with and
without sleep sets, on a few limiters, on the server on virtual time.

Each row runs the bounded stage to the end of its bound (no find stops it: every schedule is
judged clean here) twice: as it is, and with no two steps taken to commute. It prints the
schedules each needed, their ratio, and the seconds.

    .venv/bin/python bench/bounded_reduction.py [--budget N]
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from unittest import mock

import redis

from ratelimit_harness.harness.explorer import bounded
from ratelimit_harness.harness.explorer.run import Run, Setup, scheduled
from ratelimit_harness.harness.provision import provision_explorer
from ratelimit_harness.limiters import Policy

ROWS = [  # limiter, policy, identities
    ("fixed-window-lua", "fixed-window:limit=1,window=10", ("user:1",)),
    ("fixed-window-lua", "fixed-window:limit=1,window=10", ("user:1", "user:2")),
    ("naive-get-set", "fixed-window:limit=1,window=10", ("user:1", "user:2")),
    ("sliding-log-pipeline", "sliding-window:limit=1,window=10", ("user:1", "user:2")),
]


def exhaust(
    setup: Setup, admin: redis.Redis, bound: bounded.Bound, budget: int
) -> tuple[int, bool, float]:
    """Schedules run to exhaust ``bound`` (or ``budget``), whether it was, and the seconds."""
    started = time.perf_counter()
    coverage = bounded.search(
        lambda: Run(setup, admin), setup.policy, bound, lambda _: False, budget
    )
    return coverage.schedules, coverage.complete, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--budget", type=int, default=5000, help="schedules at most (default: 5000)"
    )
    args = parser.parse_args()
    heads = ("with", "without", "ratio", "s with", "s without")
    print(f"{'limiter':22} ids " + " ".join(f"{h:>9}" for h in heads))
    with provision_explorer() as server:
        admin = redis.Redis.from_url(server.url)
        for limiter, spec, identities in ROWS:
            policy = Policy.parse(spec)
            setup = Setup(limiter, policy, 2, server.url, clock_file=server.clock_file)
            bound = replace(bounded.bound_for(policy, 2, ["crash", "stall"]), identities=identities)
            with scheduled():
                reduced, done, seconds = exhaust(setup, admin, bound, args.budget)
                with mock.patch.object(bounded, "_commute", return_value=False):
                    plain, plain_done, plain_seconds = exhaust(setup, admin, bound, args.budget)
            shown = [f"{n}{'' if d else '+'}" for n, d in ((reduced, done), (plain, plain_done))]
            figures = (*shown, f"{plain / reduced:.1f}", f"{seconds:.1f}", f"{plain_seconds:.1f}")
            print(f"{limiter:22} {len(identities):>3} " + " ".join(f"{f:>9}" for f in figures))
    print("+: the budget ran out before the bound did")


if __name__ == "__main__":
    main()
