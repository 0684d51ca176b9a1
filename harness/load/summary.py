"""The printed summary of a load run: one row per rule, then a witness for each violation."""

from __future__ import annotations

from harness.listing import table
from harness.load.judge import LoadVerdict, RuleVerdict

KINDS = ("over-admission", "wrongful-rejection", "immortal-key")


def summary(verdict: LoadVerdict) -> str:
    if not verdict.rules:
        return f"no request reached a rate-limited endpoint in {verdict.seconds:.1f} s"
    rows = [_row(r) for r in verdict.rules]
    headers = (
        *("rule", "limiter", "policy", "decisions", "admitted", "rejected", "errors"),
        *("over-admission", "wrongful-rejection", "immortal-key", "header lies"),
        *("p50 ms", "p90 ms", "p99 ms", "p99.9 ms", "max ms"),
    )
    rate = verdict.requests / verdict.seconds if verdict.seconds else 0.0
    lines = [
        table(headers, rows),
        "",
        f"{verdict.requests:,} requests in {verdict.seconds:.1f} s ({rate:,.0f} requests/s); "
        "latency as the clients measured it",
    ]
    failures = [
        f"  {r.rule.name}: {r.rule.limiter} failed (the first time: {r.first_error})"
        for r in verdict.rules
        if r.first_error
    ]
    if failures:
        lines += ["", "Limiter failures (each such request is unknown: 503 to its client):"]
        lines += failures
    witnesses = [line for r in verdict.rules for line in _witnesses(r)]
    if witnesses:
        lines += ["", "Witnesses (the first of each kind):", *witnesses]
    lines += ["", "no violation" if verdict.valid else "violations found"]
    return "\n".join(lines)


def _row(r: RuleVerdict) -> list[str]:
    outcomes = r.server.metrics.get("outcomes", {})
    counts = {v.kind: v.count for v in r.server.violations}
    client = {v.kind: v.count for v in r.client.violations}
    found = [_both(counts.get(kind, 0), client.get(kind, 0)) for kind in KINDS]
    measured = bool(r.latency_ms.get("count"))  # the outbound calls are not the clients' to time
    latency = [
        f"{r.latency_ms[p]:.2f}" if measured else "-" for p in ("p50", "p90", "p99", "p99.9", "max")
    ]
    return [
        *(r.rule.name, r.rule.limiter, r.rule.policy, str(r.server.operations)),
        *(str(outcomes.get(k, 0)) for k in ("allowed", "rejected")),
        str(outcomes.get("unknown", 0) + outcomes.get("error", 0)),
        *found,
        str(sum(r.lies.values())),
        *latency,
    ]


def _both(server: int, client: int) -> str:
    """The count the instances' journals prove, and the clients' own if it differs."""
    return str(server) if server == client or not client else f"{server} (clients: {client})"


def _witnesses(r: RuleVerdict) -> list[str]:
    lines = []
    for side, verdict in (("instances", r.server), ("clients", r.client)):
        for violation in verdict.violations:
            if violation.witnesses:
                detail = violation.witnesses[0].detail
                lines.append(f"  {r.rule.name} {violation.kind} ({side}): {detail}")
    for kind, example in r.lie_examples.items():
        lines.append(f"  {r.rule.name} header lie {kind}: {example}")
    return lines
