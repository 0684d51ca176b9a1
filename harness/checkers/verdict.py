"""What a checker concludes: violations, each with witnesses a person can read."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.history import Operation

MAX_WITNESSES = 20  # per violation kind; the count covers them all


@dataclass(frozen=True)
class Witness:
    """Why one violation holds: the span it is about, the operations that prove it, a sentence."""

    key: str
    span: tuple[float, float]
    operations: Sequence[Operation]
    detail: str
    excess: int = 1  # how many of the violation's count this witness accounts for

    @property
    def processes(self) -> list[str]:
        return sorted({op.process for op in self.operations})

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "span": list(self.span),
            "detail": self.detail,
            "processes": self.processes,
            "operations": [
                {
                    "process": op.process,
                    "invoke": op.invoke,
                    "complete": op.complete,
                    "outcome": str(op.outcome),
                }
                for op in self.operations
            ],
        }


@dataclass
class Violation:
    kind: str  # over-admission, wrongful-rejection, immortal-key, collision
    witnesses: list[Witness] = field(default_factory=list)

    @property
    def count(self) -> int:
        return sum(w.excess for w in self.witnesses)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "count": self.count,
            "witnesses": [w.to_json() for w in self.witnesses[:MAX_WITNESSES]],
        }


@dataclass
class Verdict:
    policy: str
    operations: int
    violations: list[Violation] = field(default_factory=list)
    inconclusive: list[Witness] = field(default_factory=list)  # spans the search gave up on
    metrics: dict[str, Any] = field(default_factory=dict)

    @property
    def valid(self) -> bool:
        return not any(v.count for v in self.violations)

    @property
    def kinds(self) -> set[str]:
        """The kinds of violation found."""
        return {v.kind for v in self.violations if v.count}

    def add(self, kind: str, witnesses: Iterable[Witness]) -> None:
        """Add witnesses of ``kind``, to the violation of that kind already listed if any."""
        found = list(witnesses)
        if not found:
            return
        listed = next((v for v in self.violations if v.kind == kind), None)
        if listed is None:
            self.violations.append(Violation(kind, found))
        else:
            listed.witnesses += found

    def to_json(self) -> dict[str, Any]:
        return {
            "valid": self.valid,
            "policy": self.policy,
            "operations": self.operations,
            "violations": [v.to_json() for v in self.violations],
            "inconclusive": [w.to_json() for w in self.inconclusive[:MAX_WITNESSES]],
            "metrics": self.metrics,
        }
