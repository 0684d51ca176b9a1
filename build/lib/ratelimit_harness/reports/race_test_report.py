"""The report of a race-test run: one table row per limiter and flaw, each a JUnit case, and
the trace of each flaw found (see ``tables``)."""

from __future__ import annotations

from ratelimit_harness.harness.history.races import RaceTestRow
from ratelimit_harness.reports.race import RaceTest
from ratelimit_harness.reports.race_report import trace_finding, trace_text
from ratelimit_harness.reports.tables import CAUGHT, CLEAN, MISMATCH, Case, Finding, Report, Table

# the race-test table's columns: one row per limiter and flaw
RACE_TEST_HEADERS = ["limiter", "flaw", "result", "needs", "schedules", "seconds", "steps"]


def race_test_report(run: RaceTest) -> Report:
    per_flaw = [(row, flaw) for row in run.rows for flaw in flaws_of(row)]
    return Report(
        f"Race test: {run.directory.name}",
        race_test_headline(run),
        Table(RACE_TEST_HEADERS, [_flaw_cells(row, flaw) for row, flaw in per_flaw]),
        race_test_findings(run),
        cases=[_flaw_case(run, row, flaw) for row, flaw in per_flaw],
        footer=race_test_footer(run),
    )


def race_test_headline(run: RaceTest) -> str:
    broken = [r for r in run.rows if r.expected_flaws]
    caught = [r for r in broken if r.matches]
    clean = [r for r in run.rows if not r.expected_flaws and r.matches]
    seconds = sum(r.seconds for r in run.rows)
    verdict = (
        "every verdict matches the catalogue"
        if run.all_match
        else f"{sum(not r.matches for r in run.rows)} verdicts do NOT match the catalogue"
    )
    return (
        f"Race test: {verdict}. {len(caught)} of {len(broken)} broken limiters caught with "
        f"their flaws, {len(clean)} of {len(run.rows) - len(broken)} correct ones clean; "
        f"{sum(r.examples for r in run.rows):,} schedules in {seconds:.1f} s."
    )


def flaws_of(row: RaceTestRow) -> list[str]:
    """The flaws a row has a line for: those expected, then those found unexpected; ``clean``
    for a limiter expected to have none."""
    if not row.expected_flaws:
        return [CLEAN]
    return row.expected_flaws + [f for f in row.found_flaws if f not in row.expected_flaws]


def mismatch(row: RaceTestRow, flaw: str) -> str | None:
    """Why ``row`` does not match for ``flaw`` (``clean`` for a correct limiter), or None."""
    if flaw == CLEAN and row.found_flaws:
        return f"expected clean, found {', '.join(row.found_flaws)}"
    if flaw != CLEAN and flaw not in row.found_flaws:
        return f"expected {flaw}, the search did not find it in {row.examples} schedules"
    if flaw != CLEAN and flaw not in row.expected_flaws:
        return f"found {flaw}, which the catalogue does not expect"
    search = row.search_for(flaw)
    if search and search.trace in row.replays_that_failed:
        return f"the saved trace of {flaw} did not break the limiter again on replay"
    if row.unseen:
        return (
            f"{row.unseen} commands reached Redis by clients the explorer cannot see: "
            "the verdict does not stand"
        )
    return None


def _flaw_cells(row: RaceTestRow, flaw: str) -> list[str]:
    search = row.search_for(flaw)
    result = MISMATCH if mismatch(row, flaw) else CLEAN if flaw == CLEAN else CAUGHT
    shown = "none" if flaw == CLEAN else flaw  # a correct limiter's flaws: none expected
    if search is None:
        return [row.name, shown, result, "-", str(row.examples), f"{row.seconds:.1f}", "-"]
    return [
        row.name,
        shown,
        result,
        ", ".join(search.needs),
        str(search.examples_to_find),
        f"{search.seconds_with_shrinking:.1f}",
        str(search.trace_steps),
    ]


def _flaw_case(run: RaceTest, row: RaceTestRow, flaw: str) -> Case:
    search = row.search_for(flaw)
    race = run.race_of(search) if search else None
    seconds = search.seconds_with_shrinking if search else row.seconds
    text = trace_text(race) if race else ""
    return Case("race-test", f"{row.name}[{flaw}]", mismatch(row, flaw), text, seconds)


def race_test_footer(run: RaceTest) -> list[str]:
    notes = [
        f"{r.name}: {r.limiter} built with {r.policy}, judged by {r.judged_by}."
        for r in run.rows
        if r.name != r.limiter or r.judged_by != r.policy
    ]
    policies = sorted({r.policy for r in run.rows if r.name == r.limiter})
    notes.append(f"Policies, one per kind: {'; '.join(policies)}.")
    notes.extend(
        f"{r.name} is clean: explored {r.covered}."
        for r in run.rows
        if not r.expected_flaws and not r.found_flaws and r.covered
    )
    stressed = [r for r in run.rows if r.stress_seconds]
    if stressed:
        found = [f"{r.name} ({', '.join(r.stress_found)})" for r in stressed if r.stress_found]
        notes.append(
            f"For contrast, naive stress ({stressed[0].stress_seconds:g} s of real threads on "
            f"real time per limiter) found flaws in {len(found)} of {len(stressed)}: "
            f"{', '.join(found) or 'none'}."
        )
    return notes


def race_test_findings(run: RaceTest) -> list[Finding]:
    findings = []
    for row in run.rows:
        if not row.matches:
            reasons = [m for f in flaws_of(row) if (m := mismatch(row, f))]
            findings.append(Finding(f"{row.name}: {MISMATCH}", "\n".join(reasons)))
        for search in row.searches:
            race = run.race_of(search)
            if race:
                findings.append(trace_finding(race, f"{row.name}: {', '.join(search.found)}"))
    return findings
