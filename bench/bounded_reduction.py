"""What the bounded stage's reductions save: schedules to exhaust a bound as it is, with no
states merged (see visited), and with neither that nor sleep sets, on a few limiters, on the
server on virtual time.

Each row runs the bounded stage to the end of its bound (no find stops it: every schedule is
judged clean here) three times. It prints the schedules each needed, the ratio of the last to
the first, and the seconds of each.

    .venv/bin/python bench/bounded_reduction.py [--budget N]
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from unittest import mock

import redis

from ratelimit_harness.harness.explorer.schedule.run import Run, Setup, scheduled
from ratelimit_harness.harness.explorer.search import bounded
from ratelimit_harness.harness.explorer.search.visited import Visited
from ratelimit_harness.harness.provision import provision_explorer
from ratelimit_harness.limiters import Policy

ROWS = [  # limiter, policy, identities
    ("fixed-window-lua", "fixed-window:limit=1,window=10", ("user:1",)),
    ("fixed-window-lua", "fixed-window:limit=2,window=10", ("user:1",)),
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
        "--budget", type=int, default=20_000, help="schedules at most (default: 20,000)"
    )
    args = parser.parse_args()
    heads = ("as is", "unmerged", "neither", "ratio", "s as is", "s unmerged", "s neither")
    print(f"{'limiter':22} {'limit':>5} ids " + " ".join(f"{h:>10}" for h in heads))
    with provision_explorer() as server:
        admin = redis.Redis.from_url(server.url)
        for limiter, spec, identities in ROWS:
            policy = Policy.parse(spec)
            setup = Setup(limiter, policy, 2, server.url, clock_file=server.clock_file)
            bound = replace(bounded.bound_for(policy, 2, ["crash", "stall"]), identities=identities)
            unmerged = mock.patch.object(Visited, "again", return_value=False)
            apart = mock.patch.object(bounded, "_commute", return_value=False)
            with scheduled():
                reduced = exhaust(setup, admin, bound, args.budget)
                with unmerged:
                    half = exhaust(setup, admin, bound, args.budget)
                    with apart:
                        plain = exhaust(setup, admin, bound, args.budget)
            runs = [f"{n:,}{'' if done else '+'}" for n, done, _ in (reduced, half, plain)]
            seconds = [f"{s:.1f}" for _, _, s in (reduced, half, plain)]
            figures = (*runs, f"{plain[0] / reduced[0]:.1f}", *seconds)
            print(
                f"{limiter:22} {policy.limit:>5} {len(identities):>3} "
                + " ".join(f"{f:>10}" for f in figures)
            )
    print("+: the budget ran out before the bound did")


if __name__ == "__main__":
    main()
