"""The report of one race: its search, its verdict and the shrunk trace of what it found (see
``tables``)."""

from __future__ import annotations

from ratelimit_harness.reports.race import Race
from ratelimit_harness.reports.tables import Case, Finding, Report, Table
from ratelimit_harness.reports.verdicts import witness_text


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
