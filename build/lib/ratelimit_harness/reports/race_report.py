"""The report of one race: its run directory (its summary: each flaw, or what a clean race
covered) or one saved race (its verdict and the shrunk trace of what it found); see ``tables``."""

from __future__ import annotations

from ratelimit_harness.harness.history.races import RaceFlaw, RaceSummary
from ratelimit_harness.reports.race import Race, RaceRun
from ratelimit_harness.reports.tables import CAUGHT, CLEAN, Case, Finding, Report, Table
from ratelimit_harness.reports.verdicts import witness_text

NOT_JUDGED = "not judged"  # a race with no flaw that may not be judged (it exited 2)

# a race run's table: one row per flaw found, or one for a clean race
RACE_RUN_HEADERS = ["flaw", "result", "found by", "needs", "schedules", "seconds", "steps"]


def race_run_report(run: RaceRun) -> Report:
    summary = run.summary
    rows = [_flaw_cells(flaw) for flaw in summary.flaws]
    suite = f"race {summary.limiter}"
    cases = [
        Case(suite, f"{summary.limiter}[{kind}]", kind, _evidence(flaw, race), flaw.seconds_to_find)
        for flaw, race in zip(summary.flaws, run.races, strict=True)
        for kind in flaw.kinds
    ]
    faults = ", ".join(summary.nemesis) or "none"
    footer = [f"Faults allowed: {faults}; {summary.examples} schedules in {summary.seconds:.1f} s."]
    not_judged = _not_judged(summary)
    if not summary.flaws:
        result = NOT_JUDGED if not_judged else CLEAN
        rows = [["none", result, "-", "-", str(summary.examples), f"{summary.seconds:.1f}", "-"]]
        name = f"{summary.limiter}[{CLEAN}]"
        cases = [Case(suite, name, None, summary.covered, summary.seconds, skipped=not_judged)]
        footer.append(not_judged or f"Explored {summary.covered}.")
    return Report(
        f"Race: {run.directory.name}",
        race_run_headline(run),
        Table(RACE_RUN_HEADERS, rows),
        [trace_finding(race) for race in run.races if race is not None],
        cases=cases,
        footer=footer,
    )


def _flaw_cells(flaw: RaceFlaw) -> list[str]:
    return [
        ", ".join(flaw.kinds),
        CAUGHT,
        flaw.found_by,
        ", ".join(flaw.needs),
        str(flaw.schedules),
        f"{flaw.seconds_to_find:.1f}",
        str(flaw.steps),
    ]


def _evidence(flaw: RaceFlaw, race: Race | None) -> str:
    return trace_text(race) if race else f"its saved race is no longer at {flaw.trace}"


def _not_judged(summary: RaceSummary) -> str | None:
    """Why a race with no flaw was not judged (the command exited 2), or None."""
    if summary.unscheduled_refused:
        return "Not judged: Redis ran commands for clients the explorer cannot see."
    if summary.off_clock_refused:
        return "Not judged: the limiter decided by a clock the explorer cannot move."
    return None


def race_run_headline(run: RaceRun) -> str:
    summary = run.summary
    race = f"Race of {summary.limiter} with {summary.policy}"
    if not summary.flaws:
        judged = "not judged" if _not_judged(summary) else "no violation"
        return f"{race}: {judged} in {summary.examples} schedules."
    return f"{race}: {', '.join(summary.found)} ({len(summary.flaws)} flaws)."


def race_report(race: Race) -> Report:
    saved = race.saved
    table = Table(
        ["limiter", "policy", "judged by", "instances", "violations", "trace steps"],
        [
            [
                saved.limiter,
                saved.policy,
                saved.judged_by,
                str(saved.instances),
                ", ".join(saved.violations) or "none",
                str(len(saved.steps)),
            ]
        ],
    )
    text = trace_text(race)
    suite = f"race {saved.limiter}"
    checked = saved.verdict.checked or saved.violations
    cases = [
        Case(suite, f"{saved.limiter}[{kind}]", kind if kind in saved.violations else None, text)
        for kind in checked
    ]
    return Report(
        f"Race: {race.name}",
        race_headline(race),
        table,
        [trace_finding(race)],
        cases=cases,
    )


def trace_finding(race: Race, title: str | None = None) -> Finding:
    saved = race.saved
    return Finding(
        title or f"{saved.limiter}: {', '.join(saved.violations) or 'no violation'}",
        trace_text(race),
        image=race.image,
    )


def trace_text(race: Race) -> str:
    saved = race.saved
    steps = "\n".join(step.show(n) for n, step in enumerate(saved.steps, 1))
    witnesses = "\n".join(witness_text(v) for v in saved.verdict.violations)
    return f"policy {saved.policy}, judged by {saved.judged_by}\n{steps}\n\n{witnesses}"


def race_headline(race: Race) -> str:
    saved = race.saved
    found = ", ".join(saved.violations) or "no violation"
    return (
        f"Race of {saved.limiter} ({saved.instances} instances, policy {saved.policy}, judged by "
        f"{saved.judged_by}): {found} in a trace of {len(saved.steps)} steps."
    )
