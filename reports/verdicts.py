"""The checkers' verdict as a run directory holds it (``Verdict.to_json``), read back."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

KINDS = ("over-admission", "wrongful-rejection", "immortal-key", "collision")


@dataclass(frozen=True)
class Operation:
    process: str
    invoke: float
    complete: float | None
    outcome: str
    key: str = ""
    now: float | None = None


@dataclass(frozen=True)
class Witness:
    key: str
    span: tuple[float, float]
    detail: str
    processes: list[str]
    operations: list[Operation]


@dataclass(frozen=True)
class Violation:
    kind: str
    count: int
    witnesses: list[Witness]


@dataclass(frozen=True)
class Verdict:
    valid: bool
    policy: str
    operations: int
    violations: list[Violation] = field(default_factory=list)
    inconclusive: list[Any] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)

    def count(self, kind: str) -> int:
        return sum(v.count for v in self.violations if v.kind == kind)

    def of_kind(self, kind: str) -> list[Violation]:
        return [v for v in self.violations if v.kind == kind]


def operation(data: dict[str, Any]) -> Operation:
    return Operation(
        process=str(data.get("process", "")),
        invoke=float(data.get("invoke", 0.0)),
        complete=None if data.get("complete") is None else float(data["complete"]),
        outcome=str(data.get("outcome", "unknown")),
        key=str(data.get("key", "")),
        now=None if data.get("now") is None else float(data["now"]),
    )


def verdict(data: dict[str, Any]) -> Verdict:
    return Verdict(
        valid=bool(data.get("valid", True)),
        policy=str(data.get("policy", "")),
        operations=int(data.get("operations", 0)),
        violations=[
            Violation(
                kind=str(v["kind"]),
                count=int(v.get("count", 0)),
                witnesses=[
                    Witness(
                        key=str(w.get("key", "")),
                        span=(float(w["span"][0]), float(w["span"][1])),
                        detail=str(w.get("detail", "")),
                        processes=[str(p) for p in w.get("processes", [])],
                        operations=[operation(o) for o in w.get("operations", [])],
                    )
                    for w in v.get("witnesses", [])
                ],
            )
            for v in data.get("violations", [])
        ],
        inconclusive=list(data.get("inconclusive", [])),
        metrics=dict(data.get("metrics", {})),
    )


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
