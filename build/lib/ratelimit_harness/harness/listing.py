"""Plain-text renderings of the catalogue and of provisioning findings."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ratelimit_harness.harness.checkers import Verdict
from ratelimit_harness.harness.provision.doctor import Finding
from ratelimit_harness.limiters import CATALOGUE, Decision


def table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """Left-aligned columns, two spaces apart, with a header rule, as wide as the cells are (the
    reports' terminal table, unwrapped; imported here, so a command that prints none does not
    load the reports)."""
    from ratelimit_harness.reports import terminal

    return terminal.table(headers, [list(map(str, row)) for row in rows], width=None)


def catalogue() -> str:
    rows = [(e.name, e.policy, ", ".join(e.flaws) or "none", e.summary) for e in CATALOGUE.values()]
    text = table(("limiter", "judged by (example policy)", "expected flaws", "what it is"), rows)
    reasons = [
        f"  {e.name}: {flaw}: {why}" for e in CATALOGUE.values() for flaw, why in e.flaws.items()
    ]
    notes = [f"  {e.name}: {e.note}" for e in CATALOGUE.values() if e.note]
    return "\n".join([text, "", "Why each flaw:", *reasons, "", "Notes:", *notes])


def findings(found: list[Finding]) -> str:
    rows = [(f.way, "yes" if f.usable else "no", f.detail) for f in found]
    return table(("way", "usable", "detail"), rows)


def decisions(rows: Iterable[tuple[int, Decision]]) -> str:
    def show(value: object) -> str:
        return "-" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)

    return table(
        ("#", "allowed", "remaining", "limit", "retry_after", "reset_at", "delay"),
        [
            (
                str(n),
                "yes" if d.allowed else "no",
                show(d.remaining),
                show(d.limit),
                show(d.retry_after),
                show(d.reset_at),
                show(d.delay),
            )
            for n, d in rows
        ],
    )


def verdict(found: Verdict, *, witnesses: int = 3) -> str:
    """The verdict as a table of violation kinds, a few witnesses each, and the metrics."""
    rows = [(v.kind, str(v.count), v.witnesses[0].detail) for v in found.violations]
    lines = [
        f"{found.operations} operations checked against {found.policy}: "
        + ("VALID" if found.valid else "VIOLATIONS FOUND"),
        "",
        table(("violation", "count", "first witness"), rows) if rows else "no violations",
    ]
    for violation in found.violations:
        lines.append(f"\n{violation.kind}:")
        shown = violation.witnesses[:witnesses]
        for witness in shown:
            lines.append(
                f"  {witness.key} {witness.span[0]:.6f}..{witness.span[1]:.6f}: "
                f"{witness.detail} (processes {', '.join(witness.processes) or '-'})"
            )
        rest = violation.count - sum(witness.excess for witness in shown)
        if rest > 0:  # of the count: a verdict lists at most MAX_WITNESSES witnesses a kind
            lines.append(f"  ... and {rest:,} more")
    if found.inconclusive:
        lines.append(f"\nundecided ({len(found.inconclusive)} spans, not counted as violations):")
        lines += [
            f"  {w.key} {w.span[0]:.6f}..{w.span[1]:.6f}: {w.detail}"
            for w in found.inconclusive[:witnesses]
        ]
    latency = found.metrics.get("latency_ms", {})
    outcomes = ", ".join(f"{k} {v}" for k, v in found.metrics.get("outcomes", {}).items())
    lines.append(f"\noutcomes: {outcomes or 'none'}")
    lines.append("latency ms: " + ", ".join(f"{k} {v:.3f}" for k, v in latency.items()))
    return "\n".join(lines)
