"""What the load's fault proxy adds at no fault: a round trip's latency, and how many it carries.

Latency: this process sends PINGs with redis-py, one after another on one connection, timing
each, through a ``FaultProxy`` (healed: forwarding at once) and straight to Redis, in turns of
``--commands`` each (so that a shared machine's swings move both alike), ``--repeat`` turns.
Prints p50 and p99 of every round trip of each path and the ratio of proxied to direct.

Throughput: ``--clients`` processes, each PINGing as fast as it can for ``--commands``, at once,
through the proxy and then straight (the proxy is one process with one thread: this is what it
forwards while the app instances of a load share it). Prints round trips a second in all, the
best of ``--repeat`` runs each, and the ratio. ``--json``: and one JSON line of both; asserts
nothing about timing.

    .venv/bin/python bench/fault_proxy_latency.py [--commands N] [--repeat R] [--clients K]
        [--redis HOW] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

import redis

from ratelimit_harness.harness.load.faults.proxy import FaultProxy
from ratelimit_harness.harness.provision import provision

WAIT = 120.0  # seconds one run of the clients may take
PROGRAM = """
import os, sys, time
import redis
client = redis.Redis.from_url(os.environ["REDIS_URL"])
client.ping()  # connects
sys.stdout.write("ready\\n"); sys.stdout.flush()
sys.stdin.readline()  # go
start = time.perf_counter()
for _ in range(int(sys.argv[1])):
    client.ping()
print(time.perf_counter() - start)
"""


def round_trips(url: str, count: int) -> list[float]:
    """Microseconds of each of ``count`` PINGs on one connection to ``url``."""
    client = redis.Redis.from_url(url)
    client.ping()  # connects
    taken = []
    for _ in range(count):
        start = time.perf_counter_ns()
        client.ping()
        taken.append((time.perf_counter_ns() - start) / 1000)
    client.close()
    return taken


def rate(url: str, clients: int, count: int) -> float:
    """Round trips a second that ``clients`` processes, ``count`` PINGs each, got from ``url``
    together (from the moment all were connected to the last one's end)."""
    environment = {**os.environ, "REDIS_URL": url}
    programs = [
        subprocess.Popen(
            [sys.executable, "-c", PROGRAM, str(count)],
            env=environment,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(clients)
    ]
    try:
        for program in programs:
            assert program.stdout is not None
            if program.stdout.readline().strip() != "ready":
                sys.exit(f"error: a client could not connect to {url}")
        start = time.perf_counter()
        for program in programs:
            assert program.stdin is not None
            program.stdin.write("go\n")
            program.stdin.flush()
        for program in programs:
            program.communicate(timeout=WAIT)
        elapsed = time.perf_counter() - start
    finally:
        for program in programs:
            program.kill()
    if any(program.returncode != 0 for program in programs):
        sys.exit(f"error: a client on {url} failed")
    return clients * count / elapsed


def percentile(samples: list[float], share: float) -> float:
    return statistics.quantiles(samples, n=100, method="inclusive")[round(share * 100) - 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commands", type=int, default=5000, help="PINGs a turn, or a client")
    parser.add_argument("--repeat", type=int, default=5, help="turns of each path")
    parser.add_argument("--clients", type=int, default=4, help="processes at once, for the rate")
    parser.add_argument("--redis", choices=("auto", "container", "embedded"), default="embedded")
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    args = parser.parse_args()
    if not (
        100 <= args.commands <= 1_000_000 and 1 <= args.repeat <= 100 and 1 <= args.clients <= 64
    ):
        sys.exit("error: --commands must be 100..1000000, --repeat 1..100, --clients 1..64")
    n, repeat = args.commands, args.repeat
    proxied: list[float] = []
    direct: list[float] = []
    with provision(args.redis) as server, FaultProxy.for_url(server.url) as proxy:
        through = proxy.url_for(server.url)
        for _ in range(repeat):
            proxied += round_trips(through, n)
            direct += round_trips(server.url, n)
        rates = (0.0, 0.0)
        for _ in range(repeat):
            rates = (
                max(rates[0], rate(through, args.clients, n)),
                max(rates[1], rate(server.url, args.clients, n)),
            )
        counts = proxy.counts()
    if counts.accepted != repeat * (1 + args.clients):
        sys.exit(f"error: the proxy accepted {counts.accepted} connections, not all it was sent")
    rows: list[dict[str, Any]] = []
    print(f"PING on one connection, {repeat} x {n}     proxied    direct    ratio")
    for share in (0.5, 0.99):
        p, d = percentile(proxied, share), percentile(direct, share)
        what = f"p{round(share * 100)} round trip"
        print(f"{what:38} {p:7.1f} µs {d:6.1f} µs   x{p / d:5.2f}")
        note = f"{p:.0f} µs a round trip, {d:.0f} µs direct"
        rows.append(_row("fault proxy latency", what, note, p, d))
    p, d = rates
    what = f"{args.clients} clients at once, round trips/s"
    print(f"{what:38} {p:10,.0f} {d:9,.0f}   x{p / d:5.2f}")
    note = f"{p:,.0f}/s proxied, {d:,.0f}/s direct"
    rows.append(_row("fault proxy throughput", what, note, p, d))
    if args.json:
        print(json.dumps({"bench": "fault_proxy_latency", "rows": rows}))


def _row(measure: str, what: str, note: str, proxied: float, direct: float) -> dict[str, Any]:
    """One row of the JSON line, as bench/table.py reads them: the ratio, proxied to direct."""
    return {
        "measure": measure,
        "what": what,
        "value": proxied / direct,
        "unit": "x direct",
        "note": note,
        "proxied": proxied,
        "direct": direct,
    }


if __name__ == "__main__":
    main()
