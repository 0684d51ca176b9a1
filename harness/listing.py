"""Plain-text renderings of the catalogue and of provisioning findings."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from harness.provision.doctor import Finding
from limiters import CATALOGUE, Decision


def table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """Left-aligned columns, two spaces apart, with a header rule."""
    rows = [list(map(str, row)) for row in rows]
    widths = [
        max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)
    ]
    lines = [headers, ["-" * w for w in widths], *rows]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in lines
    )


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
