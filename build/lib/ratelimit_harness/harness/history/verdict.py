"""What a checker concludes, and how a run directory holds it (``STEM.verdict.json``): violations,
each with witnesses a person can read. Written by the runs, read back (``Verdict.from_json``) by
``check RUN_DIR`` and by the reports: one schema, both ways.

    {"valid": false, "policy": "fixed-window:limit=1,window=10", "operations": 4,
     "checked": ["over-admission", "wrongful-rejection", "immortal-key", "collision"],
     "violations": [{"kind": "over-admission", "count": 1, "witnesses": [
        {"key": "user:1", "span": [0.0, 10.0], "detail": "...", "excess": 1,
         "processes": ["app-0", "app-1"],
         "operations": [{"process": "app-0", "key": "user:1", "invoke": 0.0, ...}, ...]}]}],
     "inconclusive": [...witnesses...], "metrics": {...}}

A kind the run could not support is not judged, and ``"unjudged"`` says why (``{kind: why}``,
absent when every kind could be). A witness's operations are history records
(``harness.history.jsonl``), at most ``MAX_WITNESSES`` witnesses a kind are kept; ``count``
covers them all.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ratelimit_harness.harness.history.jsonl import format_operation, operation_from_record
from ratelimit_harness.harness.history.operation import Operation

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
            "excess": self.excess,
            "processes": self.processes,  # for a reader; read back from the operations
            "operations": [json.loads(format_operation(op)) for op in self.operations],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Witness:
        start, end = data["span"]
        return cls(
            key=str(data["key"]),
            span=(float(start), float(end)),
            operations=[operation_from_record(op) for op in data["operations"]],
            detail=str(data["detail"]),
            excess=int(data.get("excess", 1)),
        )


@dataclass
class Violation:
    kind: str  # over-admission, wrongful-rejection, immortal-key, collision
    witnesses: list[Witness] = field(default_factory=list)
    recorded: int | None = None  # the count a verdict file says, when read back from one

    @property
    def count(self) -> int:
        if self.recorded is not None:
            return self.recorded
        return sum(w.excess for w in self.witnesses)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "count": self.count,
            "witnesses": [w.to_json() for w in self.witnesses[:MAX_WITNESSES]],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Violation:
        witnesses = [Witness.from_json(w) for w in data["witnesses"]]
        return cls(str(data["kind"]), witnesses, int(data["count"]))


@dataclass
class Verdict:
    policy: str
    operations: int
    violations: list[Violation] = field(default_factory=list)
    inconclusive: list[Witness] = field(default_factory=list)  # spans the search gave up on
    metrics: dict[str, Any] = field(default_factory=dict)
    checked: list[str] = field(default_factory=list)  # the kinds judged, in the verdict's order
    unjudged: dict[str, str] = field(default_factory=dict)  # kinds the run could not support: why

    @property
    def valid(self) -> bool:
        return not any(v.count for v in self.violations)

    @property
    def kinds(self) -> set[str]:
        """The kinds of violation found."""
        return {v.kind for v in self.violations if v.count}

    def count(self, kind: str) -> int:
        return sum(v.count for v in self.violations if v.kind == kind)

    def of_kind(self, kind: str) -> list[Violation]:
        return [v for v in self.violations if v.kind == kind]

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
            "checked": self.checked,
            "violations": [v.to_json() for v in self.violations],
            "inconclusive": [w.to_json() for w in self.inconclusive[:MAX_WITNESSES]],
            "metrics": self.metrics,
        } | ({"unjudged": self.unjudged} if self.unjudged else {})

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Verdict:
        """A verdict as ``to_json`` wrote it; KeyError, TypeError or ValueError if it is not."""
        return cls(
            policy=str(data["policy"]),
            operations=int(data["operations"]),
            violations=[Violation.from_json(v) for v in data["violations"]],
            inconclusive=[Witness.from_json(w) for w in data["inconclusive"]],
            metrics=dict(data["metrics"]),
            checked=[str(kind) for kind in data["checked"]],
            unjudged={str(k): str(why) for k, why in data.get("unjudged", {}).items()},
        )
