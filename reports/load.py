"""A load run directory (``runs/load-TIME/``) read back: its verdict, histories and latency."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.history import Operation, read_history
from harness.history.verdict import Verdict


@dataclass(frozen=True)
class RuleResult:
    name: str
    path: str
    limiter: str
    policy: str
    judged_by: str
    valid: bool
    server: Verdict
    client: Verdict
    client_outcomes: dict[str, int]
    header_lies: dict[str, int]
    header_lie_examples: dict[str, str]
    latency_ms: dict[str, float]
    first_error: str | None

    def count(self, kind: str) -> int:
        """Violations of a kind: as the instances' history shows them, else the clients'."""
        return self.server.count(kind) or self.client.count(kind)

    @property
    def kinds(self) -> list[str]:
        """The kinds its verdicts judged, then any other kind one names."""
        checked = self.server.checked + self.client.checked
        found = [v.kind for v in self.server.violations + self.client.violations]
        return list(dict.fromkeys(checked + sorted(found)))

    @property
    def lies(self) -> int:
        return sum(self.header_lies.values())


@dataclass(frozen=True)
class LoadRun:
    directory: Path
    valid: bool
    seconds: float
    requests: int
    requests_per_second: float
    rules: list[RuleResult]

    @property
    def instances(self) -> int:
        """App instances: one log each; else the most processes any rule's history shows."""
        logs = len(list((self.directory / "logs").glob("app-*.log")))
        shown = [int(r.server.metrics.get("processes", 0)) for r in self.rules]
        return logs or max(shown, default=0)

    def history(self, rule: str) -> list[Operation]:
        path = self.directory / "history" / f"{rule}.history.jsonl"
        return read_history(path) if path.exists() else []

    def latency_hdr(self, rule: str) -> str | None:
        """The clients' HdrHistogram of a rule (microseconds), base64, as ``client.json``
        holds it."""
        path = self.directory / "client.json"
        if not path.exists():
            return None
        hdr: dict[str, str] = json.loads(path.read_text()).get("latency_hdr", {})
        return hdr.get(rule)


def read_load(directory: Path) -> LoadRun:
    path = directory / "verdict.json"
    if not path.exists():
        raise ValueError(f"{directory}: no verdict.json (the run was stopped before judging?)")
    try:
        data: dict[str, Any] = json.loads(path.read_text())
        rules = [_rule(r) for r in data["rules"]]
    except (KeyError, TypeError, AttributeError) as error:
        raise ValueError(f"{path}: not a load verdict ({error!r})") from None
    return LoadRun(
        directory=directory,
        valid=bool(data.get("valid", True)),
        seconds=float(data.get("seconds", 0.0)),
        requests=int(data.get("requests", 0)),
        requests_per_second=float(data.get("requests_per_second", 0.0)),
        rules=rules,
    )


def _rule(data: dict[str, Any]) -> RuleResult:
    return RuleResult(
        name=str(data["rule"]),
        path=str(data.get("path", "")),
        limiter=str(data.get("limiter", "")),
        policy=str(data.get("policy", "")),
        judged_by=str(data.get("judged_by") or data.get("policy", "")),
        valid=bool(data.get("valid", True)),
        server=Verdict.from_json(data["server"]),
        client=Verdict.from_json(data["client"]),
        client_outcomes={str(k): int(v) for k, v in data.get("client_outcomes", {}).items()},
        header_lies={str(k): int(v) for k, v in data.get("header_lies", {}).items()},
        header_lie_examples={
            str(k): str(v) for k, v in data.get("header_lie_examples", {}).items()
        },
        latency_ms={str(k): float(v) for k, v in data.get("latency_ms", {}).items()},
        first_error=data.get("first_error"),
    )
