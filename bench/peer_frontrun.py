"""Frontrun 0.7 beside the bounded stage: schedules and seconds to find a race, and to prove a
one-script limiter clean, on one real Redis on loopback.

Frontrun (on PyPI) explores the interleavings of Python threads with DPOR and tells Redis
commands apart by the keys they touch. Each of its workers is a thread with its own redis-py
client, making R requests for one identity with a catalogue limiter; its invariant is that no
more were admitted than the policy's budget. Time stands still on both sides: frontrun's
limiters read a fixed clock, and the script limiters the server's, which stays still on the
explorer's server on virtual time (on a server on real time they get a fixed instant instead).
Our side is the bounded stage (``harness/explorer/search/bounded.py``), judged by the verdict
engine.

Three parts, each row one tool's schedules and seconds:

1. finding the interleaving races of three catalogue limiters (2 instances x 2 requests),
   until the first schedule that breaks the policy: frontrun at its default preemption bound
   (2); our stage at 2 switches with no faults or time moves (like for like), and at its
   default bound (one crash or stall, one time move);
2. proving ``fixed-window-lua`` clean at 2 workers x 3 requests and 3 workers x 2 requests:
   schedules and seconds to exhaust the bound, with the same two bounds of ours;
3. our stage alone, at its default bound, on flaws that frontrun has no way to express: a
   crash between two commands, a stall across a key's deadline, and a client clock read late
   (skew itself is drawn only by the random stage, which this leaves out).

Either tool stops on a case after ``--cap`` seconds (300), and the row says it did not finish.

Schedules do not count alike: frontrun runs an execution for each distinct order of the
conflicting steps it sees, Python bytecode included, within its preemption bound; our stage
runs one schedule for each order of round trips to Redis within its bound, less those that
only swap commuting ones. Neither replays a find here (frontrun's ``reproduce_on_failure=0``;
the explorer's confirming re-runs are not made).

Needs ``pip install 'frontrun==0.7.*'`` (the ``peer`` extra); without it, says so and exits 2.
About 15 minutes on 2 cores:

    .venv/bin/python bench/peer_frontrun.py [--cap SECONDS] [--budget N] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import redis

from ratelimit_harness.harness.checkers import Verdict, check
from ratelimit_harness.harness.explorer.schedule.run import Run, RunResult, Setup, scheduled
from ratelimit_harness.harness.explorer.search import bounded
from ratelimit_harness.harness.provision import RedisServer, provision_explorer
from ratelimit_harness.limiters import Limiter, Policy, resolve

ROOT = Path(__file__).resolve().parent.parent
NAME = "peer_frontrun"
PEER = "frontrun==0.7.*"
IDENTITY = "user:1"
NOW = 1_000_000.0  # frontrun's fixed clock: the start of a window of any whole length
MAX_EXECUTIONS = 1_000_000  # frontrun's count bound; --cap ends it first
# part 1: limiters whose over-admission needs only an interleaving, each with a policy
RACES = [
    ("naive-get-set", "fixed-window:limit=1,window=10"),
    ("token-bucket-nonatomic", "token-bucket:capacity=1,rate=0.1"),
    ("sliding-counter-mget-incr", "sliding-counter:limit=1,window=10"),
]
# part 2: the atomic Lua fixed window, at workers x requests
CLEAN = ("fixed-window-lua", "fixed-window:limit=2,window=10")
SHAPES = [(2, 3), (3, 2)]
# part 3: a limiter, its policy, the kind of violation wanted, and what frontrun lacks for it
ALONE = [
    (
        "fixed-window-incr-expire",
        "fixed-window:limit=1,window=10",
        "immortal-key",
        "needs a crash between INCR and EXPIRE; frontrun runs every worker to its end",
    ),
    (
        "tests.limiters.shapes:exists_then_incrby",
        "fixed-window:limit=2,window=10,anchor=first",
        "immortal-key",
        "needs time past the key's deadline between EXISTS and INCRBY; frontrun's virtual "
        "clock does not move a real Redis' TTLs",
    ),
    (
        "token-bucket-client-clock",
        "token-bucket:capacity=1,rate=0.1",
        "over-admission",
        "clock skew is drawn only by the random stage, not the bounded one; this asks whether "
        "a stall (a clock read that reaches Redis late) shows it within the default bound",
    ),
]


@dataclass
class Measured:
    """One tool's figures on one case."""

    measure: str
    what: str
    tool: str
    schedules: int
    seconds: float
    status: str  # found, not found, exhausted, budget, inconclusive, or not finished in N s
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def result(self) -> str:
        return {
            "found": "found",
            "not found": "not found, bound exhausted",
            "exhausted": "clean, bound exhausted",
            "budget": "budget spent",
            "inconclusive": "inconclusive",
        }.get(self.status, self.status)

    def row(self) -> dict[str, Any]:
        note = f"{self.schedules:,} schedules, {self.result}"
        return {
            "measure": self.measure,
            "what": f"{self.what}: {self.tool}",
            "value": self.seconds,
            "unit": "s",
            "note": f"{note}; {self.note}" if self.note else note,
            "tool": self.tool,
            "schedules": self.schedules,
            "status": self.status,
            **self.extra,
        }


# --- our side ------------------------------------------------------------------------------


def like_for_like(instances: int, requests: int) -> bounded.Bound:
    """Interleavings alone, from a fresh key: what frontrun explores."""
    return bounded.Bound(
        instances=instances,
        requests=requests,
        identities=(IDENTITY,),
        switches=2,
        faults=0,
        time_moves=0,
        crash=False,
        stall=False,
        warm=(0,),
    )


def with_faults(instances: int, requests: int) -> bounded.Bound:
    """The same, with the default one crash or stall and one time move."""
    return replace(
        like_for_like(instances, requests), faults=1, time_moves=1, crash=True, stall=True
    )


@dataclass
class Where:
    """The server both tools run on, a client to flush it, and their limits."""

    server: RedisServer
    admin: redis.Redis
    budget: int  # schedules our stage may run on one case
    cap: float  # seconds either tool may take on one case


class _OutOfTime(Exception):
    """The cap's seconds passed before the bounded stage ended."""


@dataclass
class Ours:
    """What one search of the bounded stage came to."""

    schedules: int  # judged
    seconds: float
    found: bool = False
    complete: bool = False  # every schedule within the bound was run
    capped: bool = False  # the cap's seconds passed first
    skipped: int = 0  # branches sleep sets skipped (unknown when capped)
    merged: int = 0  # schedules stopped at a state reached before (unknown when capped)
    faults: frozenset[str] = frozenset()  # the faults the find used


def bounded_stage(
    where: Where, limiter: str, spec: str, bound: bounded.Bound, wanted: Callable[[Verdict], bool]
) -> Ours:
    """The bounded stage until a schedule shows what is ``wanted``, the bound is exhausted, the
    budget is spent or the cap's seconds pass (call inside ``scheduled()``)."""
    policy, server, admin = Policy.parse(spec), where.server, where.admin
    setup = Setup(limiter, policy, bound.instances, server.url, clock_file=server.clock_file)
    judged, used = 0, frozenset[str]()

    def judge(outcome: RunResult) -> bool:
        nonlocal judged, used
        if time.perf_counter() - started > where.cap:
            raise _OutOfTime
        judged += 1
        if outcome.void:  # real time reached it: not judged, as the explorer does
            return False
        found = wanted(check(outcome.history, setup.judge, outcome.ttls))
        used = outcome.faults if found else used
        return found

    started = time.perf_counter()
    try:
        coverage = bounded.search(lambda: Run(setup, admin), policy, bound, judge, where.budget)
    except _OutOfTime:
        return Ours(judged, time.perf_counter() - started, capped=True)
    seconds = time.perf_counter() - started
    return Ours(
        coverage.schedules,
        seconds,
        coverage.found,
        coverage.complete,
        skipped=coverage.skipped,
        merged=coverage.merged,
        faults=used,
    )


def ours(
    measure: str, what: str, tool: str, figures: Ours, cap: float, *, note: str = ""
) -> Measured:
    if figures.found:
        status = "found"
    elif figures.complete:
        status = "exhausted" if measure == PROVE else "not found"
    elif figures.capped:
        status = f"not finished in {cap:g} s"
    else:
        status = "budget"
    extra: dict[str, Any] = {
        "complete": figures.complete,
        "skipped": figures.skipped,
        "merged": figures.merged,
    }
    if figures.found:
        used = f"the find used {' and '.join(sorted(figures.faults)) or 'no fault'}"
        note = f"{used}; {note}" if note else used
        extra["faults"] = sorted(figures.faults)
    return Measured(measure, what, tool, figures.schedules, figures.seconds, status, note, extra)


# --- frontrun's side -----------------------------------------------------------------------


@dataclass
class _Tally:
    admitted: int = 0


@dataclass
class _State:
    """One execution's limiters, one a worker, and what each admitted."""

    limiters: list[Limiter]
    tallies: list[_Tally]


@contextlib.contextmanager
def _active() -> Iterator[None]:
    """What the ``frontrun`` CLI sets for ``explore`` to run, here for the call only. Its
    LD_PRELOAD is left out: the Redis commands are seen at redis-py's ``execute_command``."""
    before = os.environ.get("FRONTRUN_ACTIVE")
    os.environ["FRONTRUN_ACTIVE"] = "1"
    try:
        yield
    finally:
        if before is None:
            del os.environ["FRONTRUN_ACTIVE"]
        else:
            os.environ["FRONTRUN_ACTIVE"] = before


def frontrun_explore(
    frontrun: Any, where: Where, limiter: str, spec: str, shape: tuple[int, int]
) -> tuple[Any, float]:
    """Frontrun's DPOR over ``shape``'s workers (threads), each making its requests of one
    identity with a client of its own, until the invariant (no more admitted than the budget)
    fails, its preemption bound (2) is exhausted, or the cap's seconds pass; and its seconds."""
    policy, server, admin, cap = Policy.parse(spec), where.server, where.admin, where.cap
    workers, requests = shape
    build = resolve(limiter)
    budget = int(policy.limit or policy.capacity or 1)
    # the script limiters read the server's clock, which stands still on virtual time
    server_clock = None if server.clock_file else (lambda: NOW)
    opened: list[redis.Redis] = []

    def setup() -> _State:
        for client in opened:
            client.close()
        opened.clear()
        admin.flushdb()  # the server this bench started
        opened.extend(redis.Redis.from_url(server.url) for _ in range(workers))
        made = [build(c, policy, clock=lambda: NOW, server_clock=server_clock) for c in opened]
        return _State(made, [_Tally() for _ in range(workers)])

    def worker(n: int) -> Callable[[_State], None]:
        def requests_of(state: _State) -> None:
            limiter, tally = state.limiters[n], state.tallies[n]
            for _ in range(requests):
                if limiter.check(IDENTITY).allowed:
                    tally.admitted += 1

        return requests_of

    def invariant(state: _State) -> bool:
        return sum(tally.admitted for tally in state.tallies) <= budget

    try:
        with _active():
            started = time.perf_counter()
            result = frontrun.explore(
                setup=setup,
                workers=[worker(n) for n in range(workers)],
                invariant=invariant,
                reproduce_on_failure=0,
                total_timeout=cap,
                max_executions=MAX_EXECUTIONS,
            )
            seconds = time.perf_counter() - started
    finally:
        for client in opened:
            client.close()
    return result, seconds


def theirs(measure: str, what: str, tool: str, figures: tuple[Any, float], cap: float) -> Measured:
    result, seconds = figures
    explored, holds = int(result.num_explored), result.property_holds
    note = ""
    if holds is False:
        status = "found"
        first = (result.explanation or "").strip().splitlines()[:1]
        if first and not first[0].startswith("Race condition found"):
            note = first[0][:120]  # a failure other than the invariant's: said as it is
    elif holds is None:
        status, note = "inconclusive", str(result.inconclusive_reason or "")[:160]
    elif seconds >= cap or explored >= MAX_EXECUTIONS:
        status, note = f"not finished in {cap:g} s", "the bound was not exhausted"
    else:
        status = "exhausted" if measure == PROVE else "not found"
    extra = {"finished": status not in ("inconclusive", f"not finished in {cap:g} s")}
    return Measured(measure, what, tool, explored, seconds, status, note, extra)


# --- the bench -----------------------------------------------------------------------------

FIND = "find an interleaving race: to the first violating schedule"
PROVE = "prove fixed-window-lua clean: to exhaust the bound"
ALONE_MEASURE = "flaws frontrun cannot express: the bounded stage alone, to the find"
FRONTRUN = "frontrun DPOR, preemption bound 2"
LIKE = "bounded, 2 switches, no faults or time moves"
FAULTS = "bounded, 2 switches, 1 crash or stall, 1 time move"


def over_admission(verdict: Verdict) -> bool:
    return "over-admission" in verdict.kinds


def invalid(verdict: Verdict) -> bool:
    return not verdict.valid


def shows(kind: str) -> Callable[[Verdict], bool]:
    return lambda verdict: kind in verdict.kinds


def our_rows(where: Where) -> list[Measured]:
    """Every row of the bounded stage, parts 1 to 3."""
    rows: list[Measured] = []
    with scheduled():
        for limiter, spec in RACES:
            for tool, bound in ((LIKE, like_for_like(2, 2)), (FAULTS, with_faults(2, 2))):
                figures = bounded_stage(where, limiter, spec, bound, over_admission)
                rows.append(show(ours(FIND, f"{limiter} 2x2", tool, figures, where.cap)))
        limiter, spec = CLEAN
        for workers, requests in SHAPES:
            for tool, make in ((LIKE, like_for_like), (FAULTS, with_faults)):
                figures = bounded_stage(where, limiter, spec, make(workers, requests), invalid)
                what = f"{limiter} {workers}x{requests}"
                rows.append(show(ours(PROVE, what, tool, figures, where.cap)))
        for limiter, spec, kind, why in ALONE:
            bound = bounded.bound_for(Policy.parse(spec), 2, ["crash", "stall"])
            figures = bounded_stage(where, limiter, spec, bound, shows(kind))
            what = f"{limiter.rsplit(':', 1)[-1]} {kind}"
            tool = f"bounded, default bound ({bound.instances}x{bound.requests})"
            rows.append(show(ours(ALONE_MEASURE, what, tool, figures, where.cap, note=why)))
    return rows


def their_rows(frontrun: Any, where: Where) -> list[Measured]:
    """Every row of frontrun, parts 1 and 2."""
    rows: list[Measured] = []
    for limiter, spec in RACES:
        figures = frontrun_explore(frontrun, where, limiter, spec, (2, 2))
        rows.append(show(theirs(FIND, f"{limiter} 2x2", FRONTRUN, figures, where.cap)))
    limiter, spec = CLEAN
    for shape in SHAPES:
        figures = frontrun_explore(frontrun, where, limiter, spec, shape)
        what = f"{limiter} {shape[0]}x{shape[1]}"
        rows.append(show(theirs(PROVE, what, FRONTRUN, figures, where.cap)))
    return rows


def show(measured: Measured) -> Measured:
    """Print a row as it is measured (to stderr: the table comes at the end)."""
    print(
        f"  {measured.what} | {measured.tool}: {measured.schedules:,} schedules, "
        f"{measured.seconds:.2f} s, {measured.result}",
        file=sys.stderr,
        flush=True,
    )
    return measured


def table(rows: list[Measured]) -> str:
    """The rows by part, each case's tools together."""
    order = [FIND, PROVE, ALONE_MEASURE]
    cases = list(dict.fromkeys((r.measure, r.what) for r in rows))
    cases.sort(key=lambda case: order.index(case[0]))
    width = max(len(r.what) for r in rows)
    tools = max(len(r.tool) for r in rows)
    lines, measure = [], ""
    for case in cases:
        if case[0] != measure:
            measure = case[0]
            lines.append(f"\n{measure}")
            heads = f"  {'case':{width}}  {'tool':{tools}}  {'schedules':>9}  {'seconds':>8}"
            lines.append(f"{heads}  result")
        for r in (r for r in rows if (r.measure, r.what) == case):
            result = f"{r.result}; {r.note}" if r.note else r.result
            lines.append(
                f"  {r.what:{width}}  {r.tool:{tools}}  {r.schedules:>9,}  {r.seconds:>8.2f}  "
                f"{result}"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--cap", type=float, default=300.0, help="seconds either tool may take on a case (300)"
    )
    parser.add_argument(
        "--budget", type=int, default=100_000, help="schedules our stage may run on a case"
    )
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    args = parser.parse_args()
    try:
        frontrun = importlib.import_module("frontrun")
    except ImportError:
        print(f"frontrun is not installed: pip install '{PEER}'", file=sys.stderr)
        sys.exit(2)
    version = str(getattr(frontrun, "__version__", "?"))
    if not version.startswith("0.7."):
        print(f"note: frontrun {version}, not {PEER}", file=sys.stderr)
    # this bench flushes its server: never one given by URL
    os.environ.pop("REDIS_URL", None)
    if str(ROOT) not in sys.path:  # for tests.limiters.shapes, run as bench/peer_frontrun.py
        sys.path.insert(0, str(ROOT))
    load = os.getloadavg()[0]  # before this run starts anything: other work
    started = time.perf_counter()
    with provision_explorer() as server:
        print(f"server: {server.how} ({server.detail}), frontrun {version}", file=sys.stderr)
        where = Where(server, redis.Redis.from_url(server.url), args.budget, args.cap)
        try:
            rows = our_rows(where)
            rows += their_rows(frontrun, where)
        finally:
            where.admin.close()
    print(table(rows))
    whole = time.perf_counter() - started
    print(f"\nfrontrun {version}; whole run {whole:.0f} s; load before it {load:.1f}")
    if args.json:
        print(json.dumps({"bench": NAME, "rows": [r.row() for r in rows]}))


if __name__ == "__main__":
    main()
