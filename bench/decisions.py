"""Decisions per second of each correct Lua limiter, beside the one-round-trip limit.

The limit is redis-py sending EVALSHA of a one-line script (INCR) and reading its integer reply:
no decision takes fewer round trips or less of redis-py. Each correct limiter of the catalogue,
and the nearest strategy of ``limits`` (when installed: ``pip install -e '.[compare]'``), are
timed beside it in one run on one embedded Redis, three ways:

- one connection: one thread, ``--count`` decisions (20,000);
- threads: 4 threads sharing one client (its connection pool), ``--count`` decisions among them;
- processes: 2 processes, a client each, ``--count`` decisions among them.

The candidates run interleaved, round by round (``--rounds``, 3); workers start each
measurement together at a barrier. Decisions/s is the best round; each ratio is the median over
rounds of the ratio within a round, so a machine shared with other work, slowing down and
speeding up, moves both sides of a ratio alike. Every policy admits every request, so each
decision takes the writing path. ``limits`` has no bucket: the buckets are set beside its fixed
window, its cheapest strategy. Prints decisions/s, the ratios to raw EVALSHA and to ``limits``
in the same mode, and what a decision costs the server (EVALSHA's microseconds per call from
INFO commandstats, the median of as many rounds); ``--json`` adds one JSON line.

    .venv/bin/python bench/decisions.py [--count N] [--rounds N] [--json]
"""

from __future__ import annotations

import argparse
import functools
import json
import multiprocessing
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import redis

from ratelimit_harness.harness.provision import provision
from ratelimit_harness.limiters import Policy, build

RAW = "raw EVALSHA"
# each correct Lua limiter: a policy that admits every request of the run, limits' nearest
LIMITERS = {
    "fixed-window-lua": ("fixed-window:limit=1000000,window=600", "FixedWindow"),
    "sliding-log-lua": ("sliding-window:limit=1000000,window=600", "MovingWindow"),
    "sliding-counter-lua": ("sliding-counter:limit=1000000,window=600", "SlidingWindowCounter"),
    "token-bucket-lua": ("token-bucket:capacity=1000000,rate=1000", "FixedWindow"),
    "gcra-lua": ("gcra:capacity=1000000,rate=1000", "FixedWindow"),
    "leaky-bucket": ("leaky-bucket:capacity=1000000,rate=1000000", "FixedWindow"),
}
MODES = {"one connection": 1, "threads": 4, "processes": 2}
Decide = Callable[[], object]
Timing = tuple[int, str, float, float]  # round, candidate, started, ended (time.monotonic)
Rates = dict[str, list[float]]  # candidate -> one figure per round


def candidates() -> list[str]:
    try:
        import limits  # noqa: F401
    except ImportError:
        return [RAW, *LIMITERS]
    return [RAW, *LIMITERS, *(f"limits {name}" for name in nearest_strategies())]


def nearest_strategies() -> list[str]:
    return list(dict.fromkeys(strategy for _, strategy in LIMITERS.values()))


def decider(candidate: str, client: redis.Redis) -> Decide:
    """One decision of ``candidate`` on ``client``, as a call with no arguments."""
    if candidate == RAW:
        sha = client.script_load("return redis.call('INCR', KEYS[1])")
        return functools.partial(client.evalsha, sha, 1, "bench:raw")
    if candidate in LIMITERS:
        limiter = build(candidate, client, Policy.parse(LIMITERS[candidate][0]))
        return functools.partial(limiter.check, candidate)  # a key of its own
    from limits import RateLimitItemPerHour, storage, strategies

    store = storage.RedisStorage("redis://", connection_pool=client.connection_pool)
    strategy = getattr(strategies, candidate.removeprefix("limits ") + "RateLimiter")(store)
    return functools.partial(strategy.hit, RateLimitItemPerHour(1_000_000), candidate)


@dataclass(frozen=True)
class Plan:
    """What each worker does: ``count`` decisions of each of ``names``, ``rounds`` times."""

    names: list[str]
    count: int
    rounds: int


def work(client: redis.Redis, plan: Plan, start: Any) -> list[Timing]:
    """One worker's share of every measurement, each begun when every worker has reached
    ``start`` (a barrier)."""
    deciders = {name: decider(name, client) for name in plan.names}
    for decide in deciders.values():
        decide()  # loads the script, opens the connection
    timings = []
    for round_ in range(plan.rounds):
        for name, decide in deciders.items():
            start.wait()
            started = time.monotonic()
            for _ in range(plan.count):
                decide()
            timings.append((round_, name, started, time.monotonic()))
    return timings


def in_process(url: str, plan: Plan, start: Any, out: Any) -> None:
    try:
        out.put(work(redis.Redis.from_url(url), plan, start))
    except BaseException as error:
        start.abort()  # the other workers stop waiting for this one
        out.put(repr(error))
        raise


def measure(url: str, mode: str, names: list[str], count: int, rounds: int) -> Rates:
    """Decisions per second of each candidate in ``mode``, round by round: a round's total
    over the time from the first worker's start to the last worker's end."""
    workers = MODES[mode]
    plan = Plan(names, count // workers, rounds)
    timings: list[Timing] = []
    if mode == "processes":
        context = multiprocessing.get_context("spawn")
        start, out = context.Barrier(workers, timeout=600), context.Queue()
        args = (url, plan, start, out)
        processes = [context.Process(target=in_process, args=args) for _ in range(workers)]
        for process in processes:
            process.start()
        for _ in processes:
            reply = out.get(timeout=600)
            if isinstance(reply, str):
                raise SystemExit(f"a worker process failed: {reply}")
            timings += reply
        for process in processes:
            process.join()
    else:
        client = redis.Redis.from_url(url)
        barrier = threading.Barrier(workers, timeout=600)

        def thread() -> None:
            try:
                timings.extend(work(client, plan, barrier))
            except BaseException:
                barrier.abort()
                raise

        threads = [threading.Thread(target=thread) for _ in range(workers)]
        for each in threads:
            each.start()
        for each in threads:
            each.join()
    rates: Rates = {name: [0.0] * rounds for name in names}
    for round_, name in {(t[0], t[1]) for t in timings}:
        spans = [(started, ended) for r, n, started, ended in timings if (r, n) == (round_, name)]
        seconds = max(ended for _, ended in spans) - min(started for started, _ in spans)
        rates[name][round_] = plan.count * workers / seconds
    return rates


def server_microseconds(
    url: str, names: list[str], rounds: int, count: int = 2000
) -> dict[str, float]:
    """What one decision costs the server: EVALSHA's microseconds per call (INFO commandstats)
    over ``count`` decisions of each candidate alone on one connection, the median of
    ``rounds`` rounds, the candidates interleaved."""
    client = redis.Redis.from_url(url)
    deciders = {name: decider(name, client) for name in names}
    costs: Rates = {name: [] for name in names}
    for _ in range(rounds):
        for name, decide in deciders.items():
            decide()
            client.config_resetstat()
            for _ in range(count):
                decide()
            stats = client.info("commandstats")["cmdstat_evalsha"]
            costs[name].append(float(stats["usec_per_call"]))
    return {name: statistics.median(each) for name, each in costs.items()}


def ratio(rates: Rates, name: str, other: str) -> float:
    """The median over rounds of ``name``'s rate over ``other``'s in the same round."""
    pairs = zip(rates[name], rates[other], strict=True)
    return statistics.median(mine / theirs for mine, theirs in pairs)


def rows(mode: str, rates: Rates, server: dict[str, float]) -> list[dict[str, Any]]:
    """One row per candidate: its best decisions/s, the ratios to raw EVALSHA and to limits'
    nearest strategy (None, and no nearest, where there is none to compare), and the server's
    microseconds."""
    nearest = {name: f"limits {strategy}" for name, (_, strategy) in LIMITERS.items()}
    table = []
    for name, each in rates.items():
        rate = max(each)
        vs_raw = ratio(rates, name, RAW)
        vs_limits = ratio(rates, name, nearest[name]) if nearest.get(name) in rates else None
        note = f"x{vs_raw:.2f} raw EVALSHA"
        if vs_limits is not None:
            note += f", x{vs_limits:.2f} {nearest[name]}"
        table.append(
            {
                "measure": f"decisions/s, {mode}",
                "workers": MODES[mode],
                "what": name,
                "value": round(rate),
                "unit": "/s",
                "note": f"{note}; server {server[name]:.1f} us",
                "vs_raw": round(vs_raw, 3),
                "vs_limits": None if vs_limits is None else round(vs_limits, 3),
                "nearest": None if vs_limits is None else nearest[name],
                "server_us": server[name],
            }
        )
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=20_000, help="decisions per measurement")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved measurements")
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    args = parser.parse_args()
    names = candidates()
    if "limits FixedWindow" not in names:
        print("limits not installed: pip install -e '.[compare]' to compare with it")
    table = []
    with provision("embedded") as server:
        cost = server_microseconds(server.url, names, args.rounds)
        print(f"{'mode':15} {'candidate':27} {'decisions/s':>11}  ratios; EVALSHA on the server")
        for mode in args.modes:
            rates = measure(server.url, mode, names, args.count, args.rounds)
            for row in rows(mode, {name: rates[name] for name in names}, cost):
                print(f"{mode:15} {row['what']:27} {row['value']:>11,}  {row['note']}", flush=True)
                table.append(row)
    if args.json:
        print(json.dumps({"bench": "decisions", "rows": table}))


if __name__ == "__main__":
    main()
