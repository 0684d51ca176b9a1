"""What every format shows of a run, once: one ``Report`` per run, which the terminal table,
``summary.md``, ``report.html`` and ``junit.xml`` each render and never build themselves.

A report has a headline, a table, a footer, the test cases JUnit lists (for a race-test, one
per limiter and flaw, as the table's rows), and the findings: each violation with its evidence.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ratelimit_harness.harness.history.loads import OUTBOUND, FaultEffect, RuleRecord
from ratelimit_harness.harness.history.races import RaceTestRow
from ratelimit_harness.reports.load import LoadRun
from ratelimit_harness.reports.race import Race, RaceTest
from ratelimit_harness.reports.verdicts import witness_text

# the race-test table's columns: one row per limiter and flaw
RACE_TEST_HEADERS = ["limiter", "flaw", "result", "needs", "schedules", "seconds", "steps"]
CAUGHT, CLEAN, MISMATCH = "caught", "clean", "MISMATCH"


@dataclass(frozen=True)
class Table:
    headers: list[str]
    rows: list[list[str]]


@dataclass(frozen=True)
class Finding:
    """One violation (or mismatch) with its evidence: a shrunk trace or witnesses."""

    title: str
    body: str
    image: str | None = None  # the plot that shows it, a file name in the output directory


@dataclass(frozen=True)
class Case:
    """One test case of ``junit.xml``: a limiter and flaw, a kind, a rule and check."""

    suite: str
    name: str
    failure: str | None = None  # the message; None when it passed
    text: str = ""  # the evidence: a trace or witnesses
    seconds: float = 0.0
    skipped: str | None = None  # why it could not be judged; None when it was


@dataclass(frozen=True)
class Report:
    """What the terminal, the page, the summary and the JUnit file show of one run."""

    title: str
    headline: str
    table: Table
    findings: list[Finding]
    findings_title: str | None = None  # a heading for the findings other than violations'
    cases: list[Case] = field(default_factory=list)
    footer: list[str] = field(default_factory=list)  # notes under the table, a paragraph each


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


def load_report(run: LoadRun) -> Report:
    return Report(
        f"Load: {run.directory.name}",
        load_headline(run),
        load_table(run),
        load_findings(run),
        cases=[case for rule in run.rules for case in _rule_cases(rule)],
        footer=load_footer(run),
    )


def load_headline(run: LoadRun) -> str:
    record = run.record
    if not record.rules:
        return f"Load: no request reached a rate-limited endpoint in {record.seconds:.1f} s."
    undecided = [r.name for r in record.rules if r.undecided]
    verdict = (
        "violations found"
        if not record.valid
        else f"nothing decided by {', '.join(undecided)}: its limiter failed every request"
        if undecided
        else "no violation, no header lie"
    )
    lost = record.sent - record.judged
    judged = f"; {record.sent:,} sent, " + (
        "every one judged" if not lost else f"{record.judged:,} judged: {lost:,} LOST"
    )
    return (
        f"Load: {verdict}. {record.requests:,} requests in {record.seconds:.1f} s "
        f"({record.requests_per_second:,.0f} requests/s) against {run.instances} instances"
        + (judged if record.sent else "")
        + "; latency as the clients measured it."
    )


def load_table(run: LoadRun) -> Table:
    return Table(
        [
            *("rule", "limiter", "decisions", "admitted", "rejected", "errors"),
            *("violations", "header lies", "p99 ms"),
        ],
        [
            [
                r.name,
                r.limiter,
                str(r.server.operations),
                *(str(_outcomes(r).get(k, 0)) for k in ("allowed", "rejected")),
                str(_outcomes(r).get("error", 0) + _outcomes(r).get("unknown", 0)),
                "; ".join(f"{k} {_kind_cell(r, k)}" for k in r.checks if r.count(k)) or "none",
                str(r.lies),
                _latency(r, "p99"),
            ]
            for r in run.rules
        ],
    )


def load_footer(run: LoadRun) -> list[str]:
    notes = []
    for r in run.rules:
        shown = ", ".join(f"{p} {_latency(r, p)}" for p in ("p50", "p90", "p99.9", "max"))
        judged = f", judged by {r.judged_by}" if r.judged_by != r.policy else ""
        notes.append(
            f"{r.name} ({r.path or 'the calls out'}): {r.limiter} with {r.policy}{judged}; "
            f"latency ms {shown}."
        )
        if r.first_error:
            notes.append(
                f"{r.name}: {r.limiter} failed (the first time: {r.first_error}); each such "
                "request is unknown, 503 to its client."
            )
        notes.extend(f"{r.name}: {kind} not judged: {why}." for kind, why in r.unjudged.items())
    notes += fault_notes(run)
    for r in run.rules:
        for side, verdict in r.sides:
            notes.extend(
                f"{r.name} {v.kind} ({side}): {v.witnesses[0].detail}"
                for v in verdict.violations
                if v.witnesses
            )
        notes.extend(
            f"{r.name} header lie {kind}: {example}"
            for kind, example in r.header_lie_examples.items()
        )
    return notes


def load_findings(run: LoadRun) -> list[Finding]:
    findings: list[Finding] = []
    for r in run.rules:
        for side, v in r.sides:
            findings.extend(
                Finding(f"{r.name} {x.kind} ({side})", witness_text(x)) for x in v.violations
            )
        findings.extend(
            Finding(f"{r.name} header lie: {kind} x{n}", r.header_lie_examples.get(kind, ""))
            for kind, n in r.header_lies.items()
            if n
        )
        if r.first_error:
            findings.append(Finding(f"{r.name}: its limiter failed", r.first_error))
    return findings


def fault_notes(run: LoadRun) -> list[str]:
    """A line per fault of the nemesis: when, and what it did to each rule."""
    record = run.record
    started = float(record.setup.get("started") or min((f.start for f in record.faults), default=0))
    notes = []
    for fault in record.faults:
        lasted = f"{fault.end - fault.start:.1f} s" if fault.end is not None else "to the end"
        on = f" on {fault.detail}" if fault.detail else ""
        effects = "; ".join(
            _effect_text(name, e)
            for name, e in fault.effects.items()
            if name != OUTBOUND or e.requests
        )
        notes.append(
            f"fault {fault.fault}{on} at {fault.start - started:.1f} s for {lasted}: "
            + (effects or "no request of a rule")
            + "."
        )
    return notes


def _effect_text(rule: str, e: FaultEffect) -> str:
    got = "admitted unchecked" if e.on_error == "open" else "refused"
    again = (
        f"deciding again {e.recovery:.2f} s after"
        if e.recovery is not None
        else "not seen deciding again before the run ended"
    )
    forgot = [
        f"{n:,} {what}"
        for n, what in ((e.over_admitted, "over-admitted"), (e.promises_broken, "promises broken"))
        if n
    ]
    fell_in = f", {' and '.join(forgot)} in windows it fell in" if forgot else ""
    return (
        f"{rule}: {e.requests:,} requests, {e.undecided:,} undecided ({got}), {e.lost:,} lost, "
        f"{again}{fell_in}"
    )


def _latency(rule: RuleRecord, percentile: str) -> str:
    """As the clients measured it; the outbound calls are not the clients' to time."""
    measured = rule.latency_ms.get("count") and percentile in rule.latency_ms
    return f"{rule.latency_ms[percentile]:.2f}" if measured else "-"


def _rule_cases(rule: RuleRecord) -> list[Case]:
    suite, cases = f"load {rule.name}", []
    for kind in rule.checks:
        found = [
            f"{side}: {witness_text(v)}"
            for side, verdict in rule.sides
            for v in verdict.of_kind(kind)
        ]
        failure = f"{rule.count(kind)} {kind} ({rule.judged_by})" if found else None
        cases.append(Case(suite, f"{rule.name}[{kind}]", failure, "\n".join(found)))
    cases += [
        Case(suite, f"{rule.name}[{kind}]", skipped=why) for kind, why in rule.unjudged.items()
    ]
    lies = "\n".join(
        f"{kind} x{n}: {rule.header_lie_examples.get(kind, '')}"
        for kind, n in rule.header_lies.items()
        if n
    )
    failure = f"{rule.lies} header lies" if lies else None
    cases.append(Case(suite, f"{rule.name}[header-lies]", failure, lies))
    return cases


def _outcomes(rule: RuleRecord) -> dict[str, int]:
    return dict(rule.server.metrics.get("outcomes", {})) or rule.client_outcomes


def _kind_cell(rule: RuleRecord, kind: str) -> str:
    server, client = rule.server.count(kind), rule.client.count(kind)
    return f"{server} (clients: {client})" if client and client != server else str(server)
