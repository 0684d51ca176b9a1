"""The report of a load run: one table row per rule, its faults' effects, and the witnesses of
each violation (see ``tables``)."""

from __future__ import annotations

from ratelimit_harness.harness.history.loads import OUTBOUND, FaultEffect, RuleRecord
from ratelimit_harness.reports.load import LoadRun
from ratelimit_harness.reports.tables import Case, Finding, Report, Table
from ratelimit_harness.reports.verdicts import witness_text


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
