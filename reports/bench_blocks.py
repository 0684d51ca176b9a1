"""The docs' figure blocks, one function each: from the entries of ``bench/results.json``
(``{name: entry}``, as bench/table.py writes them) to Markdown.

Every block opens with when, on which commit and on what it was measured, then gives the figures,
in a table where there are more than a few; prose that interprets them stays on the page,
outside the block. A block whose benchmark has no entry says how to measure it instead.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ratelimit_harness.reports.markdown import table_lines

Entry = Mapping[str, Any]
Benches = Mapping[str, Entry]
RAW = "raw EVALSHA"  # the one-round-trip limit, as bench/decisions.py names it
# how each server of an entry's machine is named in a block's opening
SERVERS = {
    "embedded": "{} embedded",
    "explorer": "{} on virtual time",
    "default": "{}, the default",
}


def measured(benches: Benches, names: list[str], servers: list[str]) -> str:
    """When, on which commit, on what machine and by which commands ``names`` were measured:
    one sentence per distinct run (``--only`` can leave entries of several)."""
    runs: dict[str, list[str]] = {}
    for name in names:
        entry = benches[name]
        machine = entry["machine"]
        dirty = " with uncommitted changes" if entry["dirty"] else ""
        about = [f"{machine['cores']} cores", f"load average {machine['load']:.1f} before the run"]
        about.append(f"Python {machine['python']}")
        about += [SERVERS[server].format(machine["servers"][server]) for server in servers]
        run = f"on {entry['date']} at commit `{entry['commit']}`{dirty} ({', '.join(about)})"
        command = " ".join([f"bench/{name}.py", *entry["arguments"]])
        runs.setdefault(run, []).append(f"`{command}`" + (" (quick)" if entry["quick"] else ""))
    return " ".join(f"*Measured {run}: {_listed(commands)}.*" for run, commands in runs.items())


def _listed(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def missing(names: list[str]) -> str:
    command = f"make bench BENCH_ARGS='--only {' '.join(names)}'" if names else "make bench"
    return f"*Not measured yet: `{command}`.*"


def block(
    names: list[str] | None, servers: list[str]
) -> Callable[[Callable[[Benches], list[str]]], Callable[[Benches], str]]:
    """A block's renderer from a function of its figures: headed by ``measured``, or
    ``missing`` when a benchmark of ``names`` (None: every entry) has no entry."""

    def wrap(figures: Callable[[Benches], list[str]]) -> Callable[[Benches], str]:
        def render(benches: Benches) -> str:
            chosen = list(benches) if names is None else names
            absent = [name for name in chosen if name not in benches]
            if absent or not chosen:
                return missing(absent)
            return "\n".join([measured(benches, chosen, servers), "", *figures(benches)])

        render.__doc__ = figures.__doc__
        return render

    return wrap


def rows(benches: Benches, name: str, measure: str) -> list[Entry]:
    return [row for row in benches[name]["rows"] if row["measure"] == measure]


def count(value: float) -> str:
    return f"{value:,.0f}"


def seconds(value: float) -> str:
    return f"{value:.1f}" if value >= 10 else f"{value:.2f}"


@block(["decisions"], ["embedded"])
def decisions(benches: Benches) -> list[str]:
    """Decisions per second and the ratios to raw EVALSHA and to ``limits``, per mode."""
    modes: dict[str, dict[str, Entry]] = {}  # "one connection", "4 threads", "2 processes"
    for row in benches["decisions"]["rows"]:
        mode = row["measure"].removeprefix("decisions/s, ")
        shown = mode if row["workers"] == 1 else f"{row['workers']} {mode}"
        modes.setdefault(shown, {})[row["what"]] = row
    (one, *others) = modes
    headers = [
        "candidate",
        f"{one}: decisions/s",
        "x raw",
        "x `limits` (nearest)",
        *(f"{mode}: x raw" for mode in others),
        "server µs",
    ]
    table = []
    for name, row in modes[one].items():
        nearest = row["nearest"] and f"{row['vs_limits']:.2f} ({row['nearest']})"
        cells = [f"`{name}`", count(row["value"]), f"{row['vs_raw']:.2f}", nearest or ""]
        cells += [f"{modes[mode][name]['vs_raw']:.2f}" for mode in others]
        table.append([*cells, f"{row['server_us']:.1f}"])
    trip = 1e6 / modes[one][RAW]["value"]
    lua = [name for name in modes[one] if name != RAW and not name.startswith("limits ")]
    near_raw = [_at_least(modes[mode], lua, "vs_raw", 0.9) for mode in modes]
    level = [_at_least(modes[mode], lua, "vs_limits", 1.0) for mode in modes]
    return [
        *table_lines(headers, table),
        "",
        f"Raw EVALSHA on one connection: {count(1e6 / trip)} decisions/s, a round trip of "
        f"{trip:.1f} µs; 0.9 of its rate leaves {trip / 9:.1f} µs over that round trip. "
        f"Of the {len(lua)} Lua limiters, at 0.9 of raw EVALSHA or more: "
        f"{_per_mode(near_raw, modes)}; level with `limits`' nearest or ahead (x1.00 or more): "
        f"{_per_mode(level, modes)}.",
    ]


def _at_least(rows: dict[str, Entry], names: list[str], ratio: str, goal: float) -> int:
    """How many of ``names`` reach ``goal`` as shown (two decimals) in their ``ratio``."""
    return sum(1 for name in names if round(rows[name][ratio] or 0.0, 2) >= goal)


def _per_mode(counts: list[int], modes: dict[str, dict[str, Entry]]) -> str:
    (one, *others) = modes
    return ", ".join(
        [
            f"{counts[0]} on {one}",
            *(f"{n} with {m}" for n, m in zip(counts[1:], others, strict=True)),
        ]
    )


@block(["check_speed"], [])
def check_speed(benches: Benches) -> list[str]:
    """The verdict engine: operations read and checked per second, per policy."""
    table = [
        [
            f"`{row['what']}`",
            count(row["operations"]),
            f"{row['read_s']:.2f}",
            f"{row['check_s']:.2f}",
            f"{row['read_s'] + row['check_s']:.2f}",
            count(row["value"]),
        ]
        for row in benches["check_speed"]["rows"]
    ]
    within = sum(1 for row in benches["check_speed"]["rows"] if 1e6 / row["value"] < 2.0)
    headers = ["policy", "operations", "read s", "check s", "total s", "operations/s"]
    return [
        *table_lines(headers, table),
        "",
        f"At these rates, {within} of the {len(table)} policies read and check 1,000,000 "
        "operations in under 2 s (the goal).",
    ]


@block(["race_test_time", "schedule_rate"], ["explorer"])
def explorer(benches: Benches) -> list[str]:
    """race-test's wall time on one job and on every core; the explorer's schedules/s."""
    walls = rows(benches, "race_test_time", "race-test wall time")
    (speed,) = rows(benches, "race_test_time", "explorer")
    times = " and ".join(f"{seconds(row['value'])} s with `{row['what']}`" for row in walls)
    if len(walls) > 1:
        times += f" (x{walls[0]['value'] / walls[-1]['value']:.2f})"
    matched = "every verdict matching" if all(r["all_match"] for r in walls) else "MISMATCHES"
    races = ", ".join(
        f"{row['value']:.0f} on `{row['what']}` ({row['slowest']:.0f}-{row['fastest']:.0f})"
        for row in benches["schedule_rate"]["rows"]
    )
    rounds = {row["rounds"] for row in benches["schedule_rate"]["rows"]}
    return [
        f"`race-test --seed 1` took {times}, {matched}. The explorer ran "
        f"{speed['value']:.0f} schedules a second in its rows with `{walls[0]['what']}` "
        f"({1000 / speed['value']:.0f} ms a schedule: {count(speed['schedules'])} schedules "
        f"in {speed['seconds']:.0f} s of searching, shrinking and replaying); `race --seed 1` "
        f"alone, schedules a second, the median of {', '.join(map(str, sorted(rounds)))} rounds "
        f"(slowest-fastest): {races}.",
    ]


@block(["history_overhead"], [])
def recording(benches: Benches) -> list[str]:
    """What recording a history costs, and how fast one is read and merged."""
    cost, read, merge = benches["history_overhead"]["rows"]
    return [
        f"Recording costs {cost['value']:.1f} µs per operation (an invoke and a completion, "
        f"{count(cost['operations'])} operations, the best of 3). `read_history` reads "
        f"{count(read['operations'])} operations in {read['seconds']:.2f} s "
        f"({count(read['value'])} a second); `merge_journals` merges "
        f"{count(merge['operations'])} in {merge['seconds']:.2f} s ({count(merge['value'])} a "
        "second).",
    ]


@block(["race_speed"], ["default"])
def race_speed(benches: Benches) -> list[str]:
    """Per flaw: how the explorer found it, how soon, and the slowest search against the goal."""
    found = benches["race_speed"]["rows"]
    headers = [
        "limiter",
        "flaw",
        "found by",
        "schedules (median)",
        "s to find (median)",
        "s with shrinking (slowest)",
        "actions after shrinking",
        "missed",
        "slowest / goal",
    ]
    table = [
        [
            row["limiter"],
            row["flaw"],
            row["stages"],
            f"{row['schedules']:.0f}",
            f"{row['value']:.2f}",
            f"{row['with_shrinking']:.2f}",
            "-".join(str(n) for n in sorted(set(row["actions"]))),
            str(row["missed"]),
            f"{row['ratio']:.2f}",
        ]
        for row in found
    ]
    slowest = max(found, key=lambda row: row["ratio"])
    over = [row for row in found if row["ratio"] >= 1]
    missed = sum(row["missed"] for row in found)
    return [
        *table_lines(headers, table),
        "",
        f"{len(found) - len(over)} of the {len(found)} searches within their goal; the slowest, "
        f"{slowest['limiter']}'s {slowest['flaw']}, at {slowest['ratio']:.2f} of it; "
        f"{missed} missed in all.",
    ]


@block(["load_speed"], ["default"])
def load_speed(benches: Benches) -> list[str]:
    """The middleware's cost, Locust's ceiling, the swarm against Locust alone, the live view's
    lag and latency under the default swarm."""
    cost = rows(benches, "load_speed", "load: middleware cost")
    ceiling = rows(benches, "load_speed", "load: Locust ceiling")
    against = rows(benches, "load_speed", "load: swarm / bare Locust")
    live = rows(benches, "load_speed", "load: live view")
    swarm = rows(benches, "load_speed", "load: default swarm")
    lines = ["The middleware's cost (wrk, 64 connections, one instance):", ""]
    if cost:
        headers = ["limiter", "bare endpoint, req/s", "behind the limiter, req/s", "µs a decision"]
        table = [
            [f"`{r['what']}`", count(r["bare"]), count(r["limited"]), count(r["value"])]
            for r in cost
        ]
        lines += table_lines(headers, table)
    else:
        lines.append("not measured: `wrk` was not installed")
    sent = "; ".join(
        f"{r['processes']} sent {count(r['value'])} requests/s "
        f"({count(r['value'] / r['processes'])} per process)"
        for r in ceiling
    )
    lines += ["", f"Locust's ceiling (no waits, 64 users), Locust processes: {sent}.", ""]
    if against:
        each = "; ".join(f"{r['processes']}: {r['value']:.2f}x ({r['note']})" for r in against)
        lines += [f"The swarm against Locust alone, Locust processes: {each}.", ""]
    if live:
        lines += [f"The live view: {live[0]['value']:.3f} ({live[0]['note']}).", ""]
    lines += ["Under the default swarm:", ""]
    headers = ["limiter", "requests/s", "p50 ms", "p99 ms", "p99.9 ms"]
    table = [
        [f"`{r['what']}`", count(r["value"])]
        + [f"{r['latency_ms'][q]:.2f}" for q in ("p50", "p99", "p99.9")]
        for r in swarm
    ]
    return lines + table_lines(headers, table)


@block(None, [])
def wall_time(benches: Benches) -> list[str]:
    """How long each benchmark took when last measured."""
    each = [f"{name} {entry['seconds']:.0f} s" for name, entry in benches.items()]
    total = sum(entry["seconds"] for entry in benches.values()) / 60
    return [f"Wall time, {total:.1f} minutes in all: {_listed(each)}."]


@block(["load_faults"], ["default"])
def load_faults(benches: Benches) -> list[str]:
    """Each fault against each limiter over repeated load runs: verdicts, what was found (an
    over-admission or header lie: in how many runs some was no fault's), undecided, recovery."""
    cells = {(r["fault"], r["limiter"]): r for r in benches["load_faults"]["rows"]}
    if not cells:
        return ["No run recorded yet: `bench/load_faults.py` fills `bench/load_faults.jsonl`."]
    faults = list(dict.fromkeys(fault for fault, _ in cells))
    limiters = list(dict.fromkeys(limiter for _, limiter in cells))
    dates = sorted({d for r in cells.values() for d in r["dates"]})
    runs = sorted({r["runs"] for r in cells.values()})
    note = next(iter(cells.values()))["note"]

    def cell(row: Entry) -> str:
        own = row["own_runs"]
        found = ", ".join(
            f"{kind} in {n}" + (f" ({own[kind]} not a fault's)" if kind in own else "")
            for kind, n in sorted(row["found"].items())
        )
        recovery = row["recovery_max"]
        again = "" if recovery is None else f", {recovery:.2f} s"
        return (
            f"{row['value']}/{row['runs']} verdicts, {row['whole']} whole; "
            f"{found or 'clean'}; {row['undecided_per_fault']:g} undecided{again}"
        )

    table = [
        [
            f"`{fault}`",
            *(
                cell(cells[fault, limiter]) if (fault, limiter) in cells else "-"
                for limiter in limiters
            ),
        ]
        for fault in faults
    ]
    made = f"on {dates[0]}" if dates[0] == dates[-1] else f"between {dates[0]} and {dates[-1]}"
    return [
        f"Runs of {note}; {' or '.join(map(str, runs))} runs a cell, made {made}. A cell: runs "
        "that ended with a verdict, those whose every request sent was judged; each kind found, "
        "in how many runs; requests undecided per fault (on average), and the longest time to "
        "decide again.",
        "",
        *table_lines(["fault", *(f"`{limiter}`" for limiter in limiters)], table),
    ]


BLOCKS: dict[str, Callable[[Benches], str]] = {
    "decisions": decisions,
    "check-speed": check_speed,
    "explorer": explorer,
    "recording": recording,
    "race-speed": race_speed,
    "load-speed": load_speed,
    "wall-time": wall_time,
    "load-faults": load_faults,
}
