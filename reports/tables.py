"""What every format shows of a run, once: the verdict table, the headline, the findings.

The Markdown and HTML builders render these; they never read a run themselves.
"""

from __future__ import annotations

from dataclasses import dataclass

from reports.load import LoadRun, RuleResult
from reports.race import RaceTest, Row, Trace
from reports.verdicts import KINDS, witness_text


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
class Report:
    """What the page and the summary show: a title, a headline, the table, the findings."""

    title: str
    headline: str
    table: Table
    findings: list[Finding]
    findings_title: str | None = None  # a heading for the findings other than violations'


def race_test_headline(run: RaceTest) -> str:
    broken = [r for r in run.rows if r.expected]
    caught = [r for r in broken if r.matches]
    clean = [r for r in run.rows if not r.expected and r.matches]
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


def race_test_table(run: RaceTest) -> Table:
    return Table(
        [
            "limiter",
            "policy",
            "expected flaws",
            "flaws found",
            "verdict",
            "how",
            "schedules",
            "seconds",
            "trace steps",
            "stress test found",
        ],
        [
            [
                r.name,
                r.policy,
                ", ".join(r.expected) or "none",
                ", ".join(r.found) or "none",
                "match" if r.matches else "MISMATCH",
                ", ".join(r.how) or "-",
                str(r.examples),
                f"{r.seconds:.2f}",
                str(r.trace_steps) if r.trace_steps else "-",
                ", ".join(r.stress_found) or "none",
            ]
            for r in run.rows
        ],
    )


def mismatch(row: Row, flaw: str) -> str | None:
    """Why ``row`` does not match for ``flaw`` (``clean`` for a correct limiter), or None."""
    if row.matches:
        return None
    if flaw == "clean":
        return f"expected clean, found {', '.join(row.found)}" if row.found else None
    if flaw in row.expected and flaw not in row.found:
        return f"expected {flaw}, the search did not find it in {row.examples} schedules"
    if flaw in row.found and flaw not in row.expected:
        return f"found {flaw}, which the catalogue does not expect"
    if any(flaw in r for r in row.replays_that_failed):
        return f"the saved trace of {flaw} did not break the limiter again on replay"
    return None


def race_test_findings(run: RaceTest) -> list[Finding]:
    findings = []
    for row in run.rows:
        if not row.matches:
            reasons = [m for f in row.expected + row.found + ["clean"] if (m := mismatch(row, f))]
            findings.append(
                Finding(f"{row.name}: MISMATCH", "\n".join(reasons) or "reported as no match")
            )
        findings.extend(
            trace_finding(t, f"{row.name}: {', '.join(t.violations)}") for t in row.traces
        )
    return findings


def trace_finding(trace: Trace, title: str | None = None) -> Finding:
    return Finding(
        title or f"{trace.limiter}: {', '.join(trace.violations) or 'no violation'}",
        trace_text(trace),
        image=race_image(trace),
    )


def trace_text(trace: Trace) -> str:
    witnesses = "\n".join(witness_text(v) for v in trace.verdict.violations)
    return f"policy {trace.policy}, judged by {trace.judged_by}\n{trace.text}\n\n{witnesses}"


def race_image(trace: Trace) -> str:
    stem = trace.path.stem
    return f"{stem}.png" if stem.startswith("race-") else f"race-{stem}.png"


def race_headline(trace: Trace) -> str:
    found = ", ".join(trace.violations) or "no violation"
    return (
        f"Race of {trace.limiter} ({trace.instances} instances, policy {trace.policy}, judged by "
        f"{trace.judged_by}): {found} in a trace of {len(trace.steps)} steps."
    )


def load_headline(run: LoadRun) -> str:
    verdict = "no violation, no header lie" if run.valid else "violations found"
    return (
        f"Load: {verdict}. {run.requests:,} requests in {run.seconds:.1f} s "
        f"({run.requests_per_second:,.0f} requests/s) against {run.instances} instances; "
        "latency as the clients measured it."
    )


def load_table(run: LoadRun) -> Table:
    percentiles = ["p50", "p99", "p99.9", "max"]
    return Table(
        ["rule", "limiter", "policy", "judged by", "decisions", "admitted", "rejected", "errors"]
        + list(KINDS[:3])
        + ["header lies"]
        + [f"{p} ms" for p in percentiles],
        [
            [
                r.name,
                r.limiter,
                r.policy,
                r.judged_by,
                str(r.server.operations),
                *(str(_outcomes(r).get(k, 0)) for k in ("allowed", "rejected", "error")),
                *(_kind_cell(r, k) for k in KINDS[:3]),
                str(r.lies),
                *(f"{r.latency_ms[p]:.2f}" if p in r.latency_ms else "-" for p in percentiles),
            ]
            for r in run.rules
        ],
    )


def load_findings(run: LoadRun) -> list[Finding]:
    findings: list[Finding] = []
    for r in run.rules:
        for side, v in (("instances", r.server), ("clients", r.client)):
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


def _outcomes(rule: RuleResult) -> dict[str, int]:
    return dict(rule.server.metrics.get("outcomes", {})) or rule.client_outcomes


def _kind_cell(rule: RuleResult, kind: str) -> str:
    server, client = rule.server.count(kind), rule.client.count(kind)
    return f"{server} (clients: {client})" if client and client != server else str(server)
