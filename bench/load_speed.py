"""The load half's speed on this machine, in five tables:

1. the rate-limit middleware's cost: one app instance under wrk (64 connections), a bare
   endpoint (``/healthz``, matched by no rule) against a limited one (``/api/x``, one limiter
   call and the headers), for a few limiters;
2. Locust's own ceiling: the ``saturate`` pattern (no waits), in 1 and in 2 Locust processes,
   requests per second and per Locust process;
3. the swarm against Locust alone, on the same two instances: 64 users with no wait send
   ``GET /api/items`` with one ``X-API-Key``, first as a plain ``FastHttpUser`` (nothing
   journalled or checked), then as the harness's ``ApiUser`` through ``load --target``; the
   ratio is what journalling, header checks and the live judge cost, in 1 and 2 processes
   (each ``--rounds`` times, in turn: the medians, and the spread of the rounds' ratios);
4. the live view's lag under that swarm, in the web UI: every 2 s, as the page polls, the
   decisions the Correctness tab shows against the requests Locust counted, in one answer;
5. each correct limiter behind four instances under the default swarm: p50 and p99 as the
   clients measured them (HdrHistogram), and the requests per second achieved.

    .venv/bin/python bench/load_speed.py [--seconds 5] [--table swarm] [--rounds 3] [--json]

``--table`` runs one table: middleware, ceiling, swarm, live or latency (default: all five).

``--json`` ends the output with one JSON line of the figures.

Needs ``wrk`` (Debian's package) for the first table; skips it where absent.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ratelimit_harness.harness.load.contract.rules import default_rules
from ratelimit_harness.harness.load.system.app import InstanceSettings
from ratelimit_harness.harness.load.system.fleet import instance_command
from ratelimit_harness.harness.provision import provision
from ratelimit_harness.harness.provision.base import free_port

LIMITERS = ("fixed-window-lua", "sliding-log-lua", "token-bucket-lua", "gcra-lua")
BARE = """
import itertools
import os

from locust import FastHttpUser, constant, task

TARGETS = os.environ["BENCH_TARGETS"].split(",")
TURN = itertools.count()


class Bare(FastHttpUser):
    wait_time = constant(0)
    host = "http://127.0.0.1"

    @task
    def read(self) -> None:
        url = TARGETS[next(TURN) % len(TARGETS)] + "/api/items"
        self.client.get(url, headers={"X-API-Key": "saturate"}, name="/api/items")
"""
USERS = 64
LOAD = (sys.executable, "-m", "ratelimit_harness", "load")
# every request admitted, and the run judged by the policy the instances keep
UNREACHED = "fixed-window:limit=1000000000,window=60"


@contextlib.contextmanager
def app_instances(
    count: int, limiter: str, redis_url: str, run_dir: str, policy: str | None = None
) -> Iterator[list[str]]:
    """``count`` app instances of ``limiter`` (the default rules, ``policy`` for ``/api/*``),
    their URLs once they serve."""
    rules = default_rules().with_default(limiter, policy)
    provider = "http://127.0.0.1:1"  # /api/* never calls it
    apps, urls = [], []
    try:
        for n in range(count):
            port = free_port()
            settings = InstanceSettings(f"app-{n}", rules, redis_url, run_dir, provider, limiter)
            apps.append(
                subprocess.Popen(
                    instance_command("127.0.0.1", port),
                    env={**os.environ, **settings.to_env()},
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,
                )
            )
            urls.append(f"http://127.0.0.1:{port}")
        time.sleep(2)
        yield urls
    finally:
        for app in apps:
            os.killpg(app.pid, signal.SIGKILL)
            app.wait()


def wrk(url: str, seconds: float) -> float:
    out = subprocess.run(
        ["wrk", "-t2", "-c64", f"-d{seconds:g}s", url], capture_output=True, text=True, check=True
    ).stdout
    return float(next(line for line in out.splitlines() if "Requests/sec" in line).split()[1])


def figure(measure: str, what: str, value: float, unit: str, note: str) -> dict[str, Any]:
    return {"measure": measure, "what": what, "value": value, "unit": unit, "note": note}


def middleware_cost(seconds: float, rounds: int) -> list[dict[str, Any]]:
    if shutil.which("wrk") is None:
        print("wrk not found: the middleware table is skipped (apt-get install wrk)\n")
        return []
    rows = []
    print(f"{'limiter':20} {'bare req/s':>11} {'limited req/s':>14} {'cost us/request':>16}")
    with provision() as server, tempfile.TemporaryDirectory() as run_dir:
        for limiter in LIMITERS:
            with app_instances(1, limiter, server.url, run_dir) as (url,):
                bare = wrk(f"{url}/healthz", seconds)
                limited = wrk(f"{url}/api/x", seconds)
            cost = (1 / limited - 1 / bare) * 1e6
            print(f"{limiter:20} {bare:>11,.0f} {limited:>14,.0f} {cost:>16.0f}")
            note = f"{limited:,.0f} req/s limited, {bare:,.0f} bare"
            row = figure("load: middleware cost", limiter, cost, "us/req", note)
            rows.append({**row, "bare": bare, "limited": limited})
    print()
    return rows


def load(args: list[str]) -> dict[str, object]:
    """``load``'s verdict, with ``locust_rps``: the requests per second Locust itself counted
    over its run time (``requests_per_second`` spans the histories, from the first request to
    the last answer), read from the stats Locust keeps in the run directory."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder, "verdict.json")
        subprocess.run(
            [*LOAD, *args, "--json", str(out)], capture_output=True, check=False, cwd=folder
        )
        verdict = dict(json.loads(out.read_text()))
        [stats] = Path(folder, "runs").glob("load-*/logs/locust_stats.csv")
        with stats.open(newline="") as rows:
            total = next(row for row in csv.DictReader(rows) if row["Name"] == "Aggregated")
        verdict["locust_rps"] = float(total["Requests/s"])
        return verdict


def locust_ceiling(seconds: float, rounds: int) -> list[dict[str, Any]]:
    rows = []
    print(f"{'Locust processes':16} {'users':>5} {'req/s':>8} {'req/s per process':>18}")
    for processes in (1, 2):
        verdict = load(
            [
                *("--locustfile", "saturate", "--duration", str(seconds)),
                *("--users", "64", "--spawn-rate", "64", "--processes", str(processes)),
            ]
        )
        rate = float(verdict["locust_rps"])  # type: ignore[arg-type]
        print(f"{processes:16} {64:>5} {rate:>8,.0f} {rate / processes:>18,.0f}")
        note = f"{rate / processes:,.0f} per process, 64 users"
        row = figure("load: Locust ceiling", f"{processes} process(es)", rate, "req/s", note)
        rows.append({**row, "processes": processes})
    print()
    return rows


def bare_locust(targets: list[str], processes: int, seconds: float, folder: Path) -> float:
    """Requests per second of a plain Locust ``FastHttpUser`` swarm (``BARE``)."""
    (folder / "bare.py").write_text(BARE)
    prefix = folder / f"bare-{processes}"
    subprocess.run(
        [
            *(sys.executable, "-m", "locust", "-f", str(folder / "bare.py"), "--headless"),
            *("-u", str(USERS), "-r", str(USERS), "-t", f"{seconds:g}s"),
            *("--processes", str(processes), "--csv", str(prefix), "--only-summary"),
        ],
        env={**os.environ, "BENCH_TARGETS": ",".join(targets)},
        capture_output=True,
        check=False,
        cwd=folder,
    )
    with open(f"{prefix}_stats.csv", newline="") as stats:
        total = next(row for row in csv.DictReader(stats) if row["Name"] == "Aggregated")
    return float(total["Requests/s"])


@contextlib.contextmanager
def no_wait_swarm() -> Iterator[tuple[list[str], Path]]:
    """Two instances of ``fixed-window-lua`` that admit every request (``UNREACHED``), and a
    folder for Locust's files: the instances' URLs
    and the folder."""
    with (
        provision() as server,
        tempfile.TemporaryDirectory() as run_dir,
        tempfile.TemporaryDirectory() as folder,
        app_instances(2, "fixed-window-lua", server.url, run_dir, UNREACHED) as targets,
    ):
        yield targets, Path(folder)


def swarm_args(targets: list[str], folder: Path, seconds: float) -> list[str]:
    """``load``'s arguments for the no-wait swarm against ``targets`` (``no_wait_swarm``), for
    ``seconds``, judged by the policy the instances keep."""
    return [
        *("--target", ",".join(targets), "--locustfile", "saturate"),
        *("--policy", UNREACHED, "--users", str(USERS), "--spawn-rate", str(USERS)),
        *("--duration", str(seconds)),
    ]


def swarm_against_locust(seconds: float, rounds: int) -> list[dict[str, Any]]:
    """Bare Locust and the swarm, in turn, ``rounds`` times each per process count: each
    rate's median, and the median of each round's ratio (a round's two runs share the
    machine's mood, so their ratio varies less than either rate)."""
    rows = []
    print(f"{'processes':9} {'Locust req/s':>12} {'swarm req/s':>11} {'ratio':>6}  medians")
    with no_wait_swarm() as (targets, folder):
        for processes in (1, 2):
            runs = []
            for _ in range(rounds):
                alone = bare_locust(targets, processes, seconds, folder)
                args = [*swarm_args(targets, folder, seconds), "--processes", str(processes)]
                swarm = float(load(args)["locust_rps"])  # type: ignore[arg-type]
                runs.append((alone, swarm, swarm / alone))
            alone, swarm, ratio = (statistics.median(column) for column in zip(*runs, strict=True))
            ratios = [r for *_, r in runs]
            spread = f"{min(ratios):.2f}-{max(ratios):.2f}"
            print(f"{processes:9} {alone:>12,.0f} {swarm:>11,.0f} {ratio:>6.2f}  ratios {spread}")
            note = (
                f"{swarm:,.0f} req/s against {alone:,.0f} for Locust alone, {USERS} users; "
                f"median of {rounds} rounds, ratios {spread}"
            )
            row = figure("load: swarm / bare Locust", f"{processes} process(es)", ratio, "x", note)
            rows.append({**row, "processes": processes, "bare": alone, "swarm": swarm})
    print()
    return rows


def live_lag(seconds: float, rounds: int) -> list[dict[str, Any]]:
    """A no-wait swarm in the web UI, started as the start form does (``POST /swarm``); every
    2 s, as the page itself polls, one answer of ``/stats/requests``: the requests Locust
    counted, and the decisions the Correctness tab shows beside them in that same answer."""
    print(f"{'second':>6} {'requests':>9} {'tab shows':>10} {'share':>6}")
    polls: list[tuple[float, int, int]] = []
    port = free_port()
    with no_wait_swarm() as (targets, folder):
        args = [
            a for a in swarm_args(targets, folder, seconds) if a not in ("--duration", str(seconds))
        ]
        run = subprocess.Popen(
            [*LOAD, *args, "--web", "--web-port", str(port)],
            cwd=folder,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            base = f"http://127.0.0.1:{port}"
            _wait_for_web(base, run)
            form = urllib.parse.urlencode({"user_count": USERS, "spawn_rate": USERS}).encode()
            urllib.request.urlopen(f"{base}/swarm", data=form, timeout=10).close()
            began = time.monotonic()
            while time.monotonic() - began < seconds:
                time.sleep(2)
                with urllib.request.urlopen(f"{base}/stats/requests", timeout=10) as answer:
                    stats = json.load(answer)
                made = next(s["num_requests"] for s in stats["stats"] if s["name"] == "Aggregated")
                rows = stats.get("extended_stats", [{}])[0].get("data", [])
                shown = sum(int(row.get("decisions", 0)) for row in rows)
                if made:
                    polls.append((time.monotonic() - began, made, shown))
                    at = polls[-1][0]
                    print(f"{at:>6.0f} {made:>9,} {shown:>10,} {shown / made:>6.2f}")
        finally:
            run.send_signal(signal.SIGINT)
            run.wait(timeout=120)
    shares = [shown / made for _, made, shown in polls]
    worst = min(shares, key=lambda share: abs(share - 1), default=0.0)
    print(
        f"at every poll the tab showed {min(shares, default=0):.3f} to "
        f"{max(shares, default=0):.3f} of the requests Locust counted\n"
    )
    note = f"share of Locust's requests the tab showed, farthest from 1 of {len(polls)} polls"
    return [figure("load: live view", "no-wait swarm", worst, "x", note)]


def _wait_for_web(base: str, run: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and run.poll() is None:
        with contextlib.suppress(OSError):
            urllib.request.urlopen(base, timeout=1).close()
            return
        time.sleep(0.2)
    raise SystemExit(f"no web UI at {base} within 60 s")


def limiter_latency(seconds: float, rounds: int) -> list[dict[str, Any]]:
    rows = []
    print(f"{'limiter':20} {'req/s':>7} {'p50 ms':>7} {'p99 ms':>7} {'p99.9 ms':>8}")
    for limiter in LIMITERS:
        verdict = load(["--limiter", limiter, "--duration", str(seconds)])
        rules = verdict["rules"]
        assert isinstance(rules, list)
        (api,) = [r for r in rules if r["rule"] == "api"]
        latency = api["latency_ms"]
        rate = float(verdict["locust_rps"])  # type: ignore[arg-type]
        print(
            f"{limiter:20} {rate:>7,.0f} {latency['p50']:>7.2f} {latency['p99']:>7.2f}"
            f" {latency['p99.9']:>8.2f}"
        )
        note = f"p50 {latency['p50']:.2f} ms, p99 {latency['p99']:.2f} ms, 4 instances"
        row = figure("load: default swarm", limiter, rate, "req/s", note)
        rows.append({**row, "latency_ms": {q: latency[q] for q in ("p50", "p99", "p99.9")}})
    return rows


TABLES = {
    "middleware": middleware_cost,
    "ceiling": locust_ceiling,
    "swarm": swarm_against_locust,
    "live": live_lag,
    "latency": limiter_latency,
}


def _at_least_one(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"a whole number from 1, not {text!r}")
    return int(text)


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--seconds", type=float, default=5)
    options.add_argument("--table", choices=TABLES, help="run this table only")
    options.add_argument(
        "--rounds",
        type=_at_least_one,
        default=3,
        help="the swarm table's runs of each (default: 3)",
    )
    options.add_argument("--json", action="store_true", help="end with one JSON line")
    args = options.parse_args()
    rows = []
    for name, table in TABLES.items():
        if args.table in (None, name):
            rows += table(args.seconds, args.rounds)
    if args.json:
        print(json.dumps({"bench": "load_speed", "rows": rows}))


if __name__ == "__main__":
    main()
