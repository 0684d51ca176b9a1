"""The checkers' verdict, as lines a person reads (the verdict itself is the run directory's
schema: ``harness.history.verdict``)."""

from __future__ import annotations

from ratelimit_harness.harness.history.verdict import Verdict, Violation

__all__ = ["Verdict", "Violation", "witness_text"]


def witness_text(violation: Violation, limit: int = 3) -> str:
    """The first witnesses of a violation, as lines a person reads."""
    lines = [f"{violation.kind}: {violation.count}"]
    for w in violation.witnesses[:limit]:
        lines.append(f"  {w.key}: {w.detail}")
        lines.extend(
            f"    {op.process:<8} [{op.invoke:.6f}, "
            f"{'never' if op.complete is None else f'{op.complete:.6f}'}] {op.outcome}"
            for op in w.operations
        )
    if len(violation.witnesses) > limit:
        lines.append(f"  ... {len(violation.witnesses) - limit} more witnesses")
    return "\n".join(lines)
