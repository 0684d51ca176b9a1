"""What the scheduling proxy adds to a round trip: through it unheld, and held and released.

The program is what the proxy serves: another process (Python on redis-py here), sending N
commands one after another and timing them itself, after one to connect. Each loop runs through
a ``SchedulingProxy`` and straight to Redis, in turns (so that a shared machine's swings move
both alike), the best of ``--repeat`` runs of each: PINGs, which are no step (forwarded at once:
the cost of the extra hop alone), and SETs, each held until this process, playing the explorer,
takes it with ``wait_held`` and lets it go with ``release``. Prints microseconds per round trip
and the ratio of proxied to direct (``--json``: and one JSON line of it); asserts nothing about
timing.

    .venv/bin/python bench/proxy_latency.py [--commands N] [--repeat R] [--redis HOW] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from ratelimit_harness.harness.explorer.wire.proxy import SchedulingProxy
from ratelimit_harness.harness.provision import provision

WAIT = 60.0  # seconds one run of the program may take
PROGRAM = """
import os, sys, time
import redis
client = redis.Redis.from_url(os.environ["REDIS_URL"])
ping, count = sys.argv[1] == "PING", int(sys.argv[2])
client.ping() if ping else client.set("bench:proxy", -1)  # connects
start = time.perf_counter()
for n in range(count):
    client.ping() if ping else client.set("bench:proxy", n)
print(time.perf_counter() - start)
"""


def run(url: str, command: str, count: int, proxy: SchedulingProxy | None = None) -> float:
    """Seconds the program took for its ``count`` commands on ``url``; with ``proxy``, this
    process releases each step it holds, at once, until the program ends."""
    environment = {**os.environ, "REDIS_URL": url}
    program = subprocess.Popen(
        [sys.executable, "-c", PROGRAM, command, str(count)],
        env=environment,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + WAIT
        while proxy is not None and program.poll() is None and time.monotonic() < deadline:
            step = proxy.wait_held(0.05)
            if step is not None:
                proxy.release(step)
        output, _ = program.communicate(timeout=max(deadline - time.monotonic(), 1.0))
    finally:
        program.kill()
    if program.returncode != 0:
        sys.exit(f"error: the program on {command} failed (exit {program.returncode})")
    return float(output)


def best(
    proxied: Callable[[], float], direct: Callable[[], float], repeat: int, count: int
) -> tuple[float, float]:
    """Microseconds per round trip of each run (seconds for ``count``), the best of ``repeat``
    each, the two taking turns."""
    through, straight = float("inf"), float("inf")
    for _ in range(repeat):
        through = min(through, proxied())
        straight = min(straight, direct())
    return through / count * 1e6, straight / count * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commands", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=5, help="best of this many runs")
    parser.add_argument("--redis", choices=("auto", "container", "embedded"), default="embedded")
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    args = parser.parse_args()
    if not 1 <= args.commands <= 1_000_000 or not 1 <= args.repeat <= 100:
        sys.exit("error: --commands must be 1..1000000 and --repeat 1..100")
    n, repeat = args.commands, args.repeat
    with provision(args.redis) as server, SchedulingProxy(server.url) as proxy:
        pings = best(
            lambda: run(proxy.url, "PING", n), lambda: run(server.url, "PING", n), repeat, n
        )
        sets = best(
            lambda: run(proxy.url, "SET", n, proxy), lambda: run(server.url, "SET", n), repeat, n
        )
        rows = [("PING, no step: forwarded at once", *pings), ("SET, held and released", *sets)]
        forwarded = proxy.counts().forwarded
    if forwarded != (n + 1) * repeat:
        sys.exit(f"error: {forwarded} steps forwarded, {(n + 1) * repeat} sent")
    print(f"{n} round trips, best of {repeat}      proxied    direct    ratio")
    for what, proxied, direct in rows:
        print(f"{what:34} {proxied:8.1f} µs {direct:6.1f} µs   x{proxied / direct:5.2f}")
    if args.json:
        measured: list[dict[str, Any]] = [
            {
                "measure": "proxy latency",
                "what": what,
                "value": proxied / direct,
                "unit": "x direct",
                "note": f"{proxied:.0f} µs a round trip, {direct:.0f} µs direct",
                "proxied_us": proxied,
                "direct_us": direct,
            }
            for what, proxied, direct in rows
        ]
        print(json.dumps({"bench": "proxy_latency", "rows": measured}))


if __name__ == "__main__":
    main()
