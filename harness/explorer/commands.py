"""The race, replay and race-test commands: what they print and which exit code they give."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from ratelimit_harness.harness import listing
from ratelimit_harness.harness.errors import (
    BadArgument,
    ClockUncontrolled,
    LimiterError,
    RealClock,
    Unscheduled,
    existing,
    writing,
)
from ratelimit_harness.harness.explorer.campaign import (
    PROFILES,
    Target,
    entry_race_policy,
    targets,
)
from ratelimit_harness.harness.explorer.clocks.real import OffClock, uncontrolled
from ratelimit_harness.harness.explorer.instances.process import POOL
from ratelimit_harness.harness.explorer.parallel import RowJob, run_rows, servers_for
from ratelimit_harness.harness.explorer.schedule.run import Setup
from ratelimit_harness.harness.explorer.search.drawing import (
    GIVE_BACKS,
    Space,
    parse_costs,
    space_for,
)
from ratelimit_harness.harness.explorer.search.explore import CONFIRM, Exploration
from ratelimit_harness.harness.explorer.server.keyspace import claim
from ratelimit_harness.harness.explorer.spec import MOST_EXAMPLES, MOST_INSTANCES, RaceSpec
from ratelimit_harness.harness.explorer.trace import load, render, save
from ratelimit_harness.harness.explorer.trace import replay as replay_saved
from ratelimit_harness.harness.explorer.wire.unseen import countable, said
from ratelimit_harness.harness.history.races import (
    RACE,
    TRACE,
    RaceFlaw,
    RaceSummary,
    RaceTestRow,
    write_race_test,
)
from ratelimit_harness.harness.provision import provision_explorer
from ratelimit_harness.harness.report import shown_in_terminal, write_report
from ratelimit_harness.harness.rundir import new_run_dir
from ratelimit_harness.limiters import CATALOGUE, Policy, PolicyError, resolve
from ratelimit_harness.limiters.js_catalogue import install as js_install

FINDERS = {"bounded": "the bounded stage", "search": "Hypothesis' search"}


def _progress(label: str) -> Callable[[Exploration], None]:
    """On a terminal, a line that counts schedules as they run (shrinking included)."""

    def show(found: Exploration) -> None:
        if sys.stderr.isatty() and (found.examples + found.shrink_runs) % 10 == 0:
            doing = "searching" if found.found is None else f"shrinking ({found.shrink_runs} tried)"
            line = f"{label}: {doing}, {found.examples} schedules"
            print(f"\r{line:<70}", end="", file=sys.stderr, flush=True)

    return show


def _budget(args: argparse.Namespace) -> int:
    budget = PROFILES[args.profile] if args.max_examples is None else args.max_examples
    if not 1 <= budget <= MOST_EXAMPLES:
        raise BadArgument(f"--max-examples must be 1..{MOST_EXAMPLES}")
    return int(budget)


@dataclass
class _Tally:
    """What the searches of one race saw, added up."""

    searches: list[Exploration]
    examples: int = 0
    decisions: int = 0
    errors: int = 0
    first_error: str = ""
    unseen: int = 0  # commands Redis ran for clients the explorer cannot see (see unseen)
    first_unseen: list[str] = field(default_factory=list)
    off_clock: OffClock = field(default_factory=OffClock)  # see clocks.real

    def __post_init__(self) -> None:
        for found in self.searches:
            self.examples += found.examples
            self.decisions += found.decisions
            self.errors += found.errors
            self.first_error = self.first_error or found.first_error
            self.unseen += found.unseen
            self.first_unseen = self.first_unseen or found.first_unseen
            self.off_clock.add(found.off_clock)


def race(args: argparse.Namespace) -> int:
    asked = _asked(args)
    setup, searches = _searched(args, asked)
    tally = _Tally(searches)
    _decided(args.limiter, tally)
    run_dir = new_run_dir("race", args.limiter)
    flaws = _saved_flaws(Path(args.trace or run_dir / TRACE), setup, searches)
    summary = _summary(args, tally, flaws, setup=setup, space=asked.space)
    _show(summary, searches)
    _recorded(summary, run_dir, args.json_out)
    return _exit(summary)


def _asked(args: argparse.Namespace) -> RaceSpec:
    """The race the arguments ask for. A bad one ends with exit 2 before any Redis starts."""
    budget = _budget(args)
    if not 1 <= args.instances <= MOST_INSTANCES:
        raise BadArgument(f"--instances must be 1..{MOST_INSTANCES}")
    space = space_for(args.nemesis, args.max_skew)
    resolve(args.limiter)  # a bad name or plug-in fails before any Redis starts
    entry = CATALOGUE.get(args.limiter)
    costs = parse_costs(args.costs) if args.costs else (entry.costs if entry else (1,))
    give_back = args.give_back or bool(entry and entry.gives_back)
    space = replace(space, costs=costs, give_backs=GIVE_BACKS if give_back else (False,))
    if give_back:
        _can_give_back(args.limiter)
    spec = args.policy or (entry_race_policy(entry) if entry else None)
    if spec is None:
        raise PolicyError("--policy is required for a plugged-in limiter")
    policy = Policy.parse(spec)
    _clock_controlled(args.limiter, args.allow_real_clock)
    return RaceSpec(args.limiter, policy, None, space, args.instances, budget, args.seed)


def _can_give_back(limiter: str) -> None:
    """BadArgument unless ``limiter`` can give a request back (``refund``), as far as can be
    told before it is built (a program is asked on the line protocol)."""
    entry = CATALOGUE.get(limiter)
    if entry is not None and not callable(getattr(entry.factory, "refund", None)):
        raise BadArgument(f"--give-back: {limiter} has no refund(identity, decision)")


def _searched(args: argparse.Namespace, asked: RaceSpec) -> tuple[Setup, list[Exploration]]:
    """The race on a Redis of its own (or ``--redis-url``): its setup and its searches."""
    with provision_explorer(args.redis, args.redis_url) as server:
        setup = asked.on_server(server, flush=claim(server, flush=args.flush))
        searches = asked.search_every_kind(setup, on_example=_progress(args.limiter))
    print(file=sys.stderr)  # ends the progress line
    return setup, searches


def _decided(limiter: str, tally: _Tally) -> None:
    """LimiterError (exit 2) when the limiter never returned a decision."""
    if tally.errors and not tally.decisions:
        raise LimiterError(
            f"{limiter} never returned a decision in {tally.examples} schedules "
            f"({tally.errors} checks); the first: {tally.first_error}"
        )


def _saved_flaws(where: Path, setup: Setup, searches: list[Exploration]) -> list[RaceFlaw]:
    """Save the shortest trace of each flaw: the first at ``where`` (``--trace``, else in the
    race's run directory); the others beside it."""
    finds = [found for found in searches if found.found is not None]
    if not finds:
        return []
    flaws = [_saved_flaw(where, setup, found, n) for n, found in enumerate(finds)]
    with writing(where.parent):
        POOL.keep_stderr(where.parent)  # a program's, as app-N.stderr
    return flaws


def _saved_flaw(where: Path, setup: Setup, found: Exploration, number: int) -> RaceFlaw:
    """Save one flaw's shortest trace (the first at ``where``); its entry in the summary."""
    assert found.found is not None
    assert found.verdict is not None
    kinds = sorted(found.kinds)
    path = where
    if number:  # the second flaw on: beside the first, named by its kinds
        path = path.with_name(f"{path.stem}-{'-'.join(kinds)}{path.suffix}")
    with writing(path):
        save(path, setup, found.found, found.verdict)
    return RaceFlaw(
        kinds=kinds,
        faults=sorted(found.faults),
        needs=found.fault_labels,
        clocks_apart=found.clocks_apart if "skew" in found.faults else None,
        trace=str(path),
        steps=found.trace_steps,
        actions=len(found.found.actions),
        found_by=found.stage,
        schedules=found.examples_to_find,
        seconds_to_find=found.seconds_to_find,
    )


def _recorded(summary: RaceSummary, run_dir: Path, json_out: str | None) -> None:
    """Write the summary into the race's run directory (``report RUN_DIR`` renders it), and to
    ``--json``'s file if asked."""
    with writing(run_dir):
        summary.write(run_dir / RACE)
    if json_out:
        with writing(json_out):
            summary.write(json_out)
    print(f"recorded in {run_dir} (ratelimit-harness report {run_dir} renders it)")


def _summary(
    args: argparse.Namespace,
    tally: _Tally,
    flaws: list[RaceFlaw],
    *,
    setup: Setup,
    space: Space,
) -> RaceSummary:
    """The race's result, as ``--json`` writes it."""
    searches, first = tally.searches, tally.searches[0]
    return RaceSummary(
        limiter=args.limiter,
        policy=str(setup.policy),
        nemesis=list(space.nemeses),
        max_skew=space.max_skew,
        found=sorted({kind for found in searches for kind in found.kinds}),
        flaws=flaws,
        examples=tally.examples,
        examples_to_find=first.examples_to_find,
        found_by=first.stage or None,
        coverage=first.coverage.to_json() if first.coverage else None,
        covered=first.covered,
        seconds_to_find=first.seconds_to_find,
        seconds=sum(f.seconds for f in searches),
        trace_steps=first.trace_steps,
        trace=flaws[0].trace if flaws else None,
        decisions=tally.decisions,
        errors=tally.errors,
        first_error=tally.first_error or None,
        void=sum(f.void for f in searches),
        unconfirmed=[
            {"found": sorted(verdict.kinds), "trace": render(outcome)}
            for found in searches
            for outcome, verdict in found.unconfirmed
        ],
        unconfirmed_count=sum(f.unconfirmed_count for f in searches),
        search_ended=first.search_ended or None,
        unscheduled=tally.unseen if setup.count_unseen else None,
        first_unscheduled=tally.first_unseen,
        allow_unscheduled=args.allow_unscheduled,
        off_clock=tally.off_clock.count,
        first_off_clock=tally.off_clock.first or None,
        allow_real_clock=args.allow_real_clock,
    )


def _show(summary: RaceSummary, searches: list[Exploration]) -> None:
    """What a race prints: each flaw and its trace, the headline, then what the headline leaves
    out. How each flaw was found, and each search's doubts, are not in the summary: those come
    from the searches."""
    finds = [found for found in searches if found.found is not None]
    for flaw, found in zip(summary.flaws, finds, strict=True):
        _show_flaw(summary, flaw, found)
    _headline(summary)
    for found in searches:
        _doubts(found)
    _notes(summary)


def _show_flaw(summary: RaceSummary, flaw: RaceFlaw, found: Exploration) -> None:
    """One flaw: how it was found, its shortest trace, its verdict and where it was saved."""
    assert found.found is not None
    assert found.verdict is not None
    shrunk = f"shrunk to {flaw.actions} actions, {found.seconds:.2f} s in all"
    print(
        f"{summary.limiter} with {summary.policy}: {', '.join(flaw.kinds)}, found by "
        f"{FINDERS[found.stage]} after {found.examples_to_find} schedules "
        f"({found.seconds_to_find:.2f} s); needs {', '.join(flaw.needs)}; {shrunk}:\n"
    )
    print("\n".join(render(found.found)))
    print(f"\n{listing.verdict(found.verdict, witnesses=1)}\n\nsaved: {flaw.trace}\n")


def _headline(summary: RaceSummary) -> None:
    """The line that says what a race found, or why it was not judged (one flaw's report says
    it itself)."""
    race = f"{summary.limiter} with {summary.policy}"
    faults = ", ".join(summary.nemesis) or "none"
    if (summary.unscheduled_refused or summary.off_clock_refused) and not summary.flaws:
        why = _unscheduled(summary) if summary.unscheduled_refused else _off_clock(summary)
        print(f"{race}: not judged in {summary.examples} schedules: {why}")
    elif not summary.flaws:  # one search, then: its seconds are the race's
        print(
            f"{race}: no violation in {summary.examples} schedules; explored "
            f"{summary.covered}; faults allowed: {faults}; {summary.seconds:.2f} s"
        )
    elif len(summary.flaws) > 1:
        print(f"{race}: {len(summary.flaws)} flaws, faults allowed: {faults}")
        for flaw in summary.flaws:
            print(f"  {', '.join(flaw.kinds)}: needs {', '.join(flaw.needs)}")


def _notes(summary: RaceSummary) -> None:
    """What a race's headline leaves out: the checks that failed, and what it was judged
    without."""
    if summary.errors:
        print(
            f"errors: {summary.errors} of {summary.errors + summary.decisions} checks raised "
            f"or answered what is not a decision; the first: {summary.first_error or ''}"
        )
    if summary.off_clock and not summary.off_clock_refused:
        print(f"real clock: {_off_clock(summary)}; judged without those times")
    if summary.unscheduled and not summary.unscheduled_refused:
        print(f"unscheduled: {_unscheduled(summary)}; judged without them")
    elif summary.unscheduled is None:
        print(
            "note: commands sent by clients the explorer cannot see are not counted on this "
            "Redis (only on one the harness started as a process: see docs/explorer.md)",
            file=sys.stderr,
        )


def _exit(summary: RaceSummary) -> int:
    """1 for a flaw, 0 for none; Unscheduled or RealClock (exit 2) for a race not judged."""
    if summary.unscheduled_refused:
        raise Unscheduled(
            f"{_unscheduled(summary)}; --allow-unscheduled judges {summary.limiter} by what "
            "the explorer saw"
        )
    if summary.off_clock_refused:
        raise RealClock(
            f"{_off_clock(summary)}; --allow-real-clock judges {summary.limiter} as if it "
            "never decided by that clock"
        )
    return 1 if summary.flaws else 0


def _unscheduled(summary: RaceSummary) -> str:
    return said(summary.unscheduled or 0, summary.first_unscheduled)


def _off_clock(summary: RaceSummary) -> str:
    return OffClock(summary.off_clock, summary.first_off_clock or "").said()


def _clock_controlled(limiter: str, allowed: bool) -> None:
    """Refuse (exit 3), before any Redis starts, a program whose clock cannot be controlled
    here, unless ``allowed``: then say so, as the verdict's condition."""
    why = uncontrolled(limiter)
    if why and not allowed:
        raise ClockUncontrolled(
            f"{limiter}'s clock cannot follow the schedule: {why}; --allow-real-clock races it "
            "on real time, judged as if it never decided by its own clock"
        )
    if why:
        print(f"note: {why}; judged as if it never decides by its own clock", file=sys.stderr)


def _doubts(found: Exploration) -> None:
    """What did not count: finds that did not show again, void runs, a search cut short."""
    if found.unconfirmed:
        outcome, verdict = found.unconfirmed[0]
        print(
            f"\nunconfirmed: {found.unconfirmed_count} schedule(s) judged a violation once and "
            f"not again on {CONFIRM} re-runs, not counted; the first "
            f"({', '.join(sorted(verdict.kinds))}):\n"
        )
        print("\n".join(render(outcome)))
    if found.void:
        print(f"void: {found.void} schedule(s) not judged: the server expired a key by real time")
    if found.search_ended:
        print(f"the search ended early: {found.search_ended}")


def replay(args: argparse.Namespace) -> int:
    saved = load(existing(args.trace, "a trace saved by race or race-test"))
    with provision_explorer(args.redis, args.redis_url) as server:
        flush = claim(server, flush=args.flush)
        result, verdict = replay_saved(saved, server.url, flush=flush, clock_file=server.clock_file)
    print("\n".join(render(result)))
    print()
    print(listing.verdict(verdict, witnesses=1))
    if result.void:
        print(f"\nvoid, each time it ran: {result.void}")
    reproduced = bool(verdict.kinds & set(saved.violations)) and not result.void
    print(f"\n{'reproduced' if reproduced else 'NOT reproduced'}: {', '.join(saved.violations)}")
    return 1 if reproduced else 0


def race_test(args: argparse.Namespace) -> int:
    budget = _budget(args)
    if not 0 <= args.stress_seconds <= 60:
        raise BadArgument("--stress-seconds must be 0..60")
    jobs = args.jobs if args.jobs is not None else (os.cpu_count() or 1)
    if not 1 <= jobs <= 64:
        raise BadArgument("--jobs must be 1..64")
    why = js_install(lambda line: print(line, file=sys.stderr, flush=True))  # node, ioredis
    if why and os.environ.get("HARNESS_REQUIRE_ALL_PATHS") == "1":
        raise BadArgument(f"the JavaScript rows cannot run here: {why}")
    if why:
        print(f"note: the chapter's JavaScript rows are skipped: {why}", file=sys.stderr)
    chosen = _chosen(targets(js=why is None), args.limiters)
    with servers_for(jobs, args.redis, args.redis_url) as servers:
        flush = claim(servers[0], flush=args.flush)
        out_dir = new_run_dir("race-test")
        own = countable(servers[0])
        job = RowJob(flush, budget, args.seed, out_dir, args.stress_seconds, own)
        rows = run_rows(chosen, job, servers, _row_done, _progress)
    with writing(out_dir):
        table = write_race_test(out_dir, rows)  # the run directory holds its table too
    if args.json_out:
        with writing(args.json_out):
            Path(args.json_out).write_text(table.read_text())
    written = write_report([out_dir])
    print(shown_in_terminal(out_dir))
    all_match = all(row.matches for row in rows)
    verdict = "all verdicts match the catalogue" if all_match else "MISMATCHES"
    print(f"\n{verdict}; traces in {out_dir}\nreport: {written[-1]}")
    return 0 if all_match else 1


def _chosen(rows: list[Target], names: str | None) -> list[Target]:
    """The rows ``--limiters`` names (every row without it); BadArgument for a name of none."""
    if names is None:
        return rows
    wanted = [name.strip() for name in names.split(",") if name.strip()]
    known = {row.label for row in rows}
    unknown = [name for name in wanted if name not in known]
    if unknown or not wanted:
        raise BadArgument(
            f"race-test has no row {unknown[0] if unknown else names!r} here; its rows: "
            + ", ".join(sorted(known))
        )
    return [row for row in rows if row.label in wanted]


def _row_done(target: Target, row: RaceTestRow) -> None:
    result = "ok" if row.matches else "MISMATCH"
    line = f"{target.label}: {result} ({row.examples} schedules, {row.seconds:.1f} s)"
    print(f"\r{line:<70}", file=sys.stderr)
