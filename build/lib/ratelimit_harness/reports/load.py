"""A load run directory (``runs/load-TIME/``) read back: its verdict, histories and latency."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ratelimit_harness.harness.history import Operation, read_history
from ratelimit_harness.harness.history.loads import VERDICT, LoadRecord, RuleRecord


@dataclass(frozen=True)
class LoadRun:
    """A load run's verdict (``harness.history.loads``) and the directory it was read from."""

    directory: Path
    record: LoadRecord

    @property
    def rules(self) -> list[RuleRecord]:
        return self.record.rules

    @property
    def instances(self) -> int:
        """App instances: as the run's setup says; else one log each; else the most processes
        any rule's history shows."""
        if self.record.setup.get("instances"):
            return int(self.record.setup["instances"])
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
    if not (directory / VERDICT).exists():
        raise ValueError(f"{directory}: no {VERDICT} (the run was stopped before judging?)")
    try:
        return LoadRun(directory, LoadRecord.read(directory))
    except OSError as error:
        raise ValueError(f"{directory}: {error.strerror or error}") from None
