"""What the clients saw, per rule: outcomes, header lies (with the first of each kind), latency.

Each Locust process keeps one; a worker sends what it gathered since its last report
(``take``) and the master adds it to its own (``merge``), so the master's view covers every
worker. ``to_json`` is what the run directory keeps as ``client.json``.
"""

from __future__ import annotations

import threading
from collections import Counter, defaultdict
from typing import Any

from ratelimit_harness.harness.history import Outcome
from ratelimit_harness.harness.load.judge.latency import Latencies

OUTCOMES = ("allowed", "rejected", "unknown")


def outcome_of(status: int, unchecked: bool = False) -> Outcome:
    """A 2xx is an admission (unless let through ``unchecked``, without a decision), a 429 a
    refusal; anything else (0: no answer) decided nothing."""
    if 200 <= status < 300:
        return Outcome.UNKNOWN if unchecked else Outcome.ALLOWED
    return Outcome.REJECTED if status == 429 else Outcome.UNKNOWN


class ClientView:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._clear()

    def _clear(self) -> None:
        self.outcomes: dict[str, Counter[str]] = defaultdict(Counter)
        self.lies: dict[str, Counter[str]] = defaultdict(Counter)
        self.examples: dict[str, dict[str, str]] = defaultdict(dict)  # rule -> lie -> witness
        self.latencies = Latencies()

    def record(self, rule: str, outcome: str, seconds: float | None) -> None:
        with self._lock:
            self.outcomes[rule][outcome] += 1
            if seconds is not None:
                self.latencies.record(rule, seconds)

    def lie(self, rule: str, kind: str, witness: str) -> None:
        with self._lock:
            self.lies[rule][kind] += 1
            self.examples[rule].setdefault(kind, witness)

    def take(self) -> dict[str, Any]:
        """Everything gathered since the last ``take``, as a message, and forget it."""
        with self._lock:
            report = self.to_json()
            self._clear()
        return report

    def merge(self, report: dict[str, Any]) -> None:
        with self._lock:
            for rule, counts in report.get("outcomes", {}).items():
                self.outcomes[rule].update(counts)
            for rule, counts in report.get("lies", {}).items():
                self.lies[rule].update(counts)
            for rule, examples in report.get("examples", {}).items():
                for kind, witness in examples.items():
                    self.examples[rule].setdefault(kind, witness)
            self.latencies.merge(report.get("latency_hdr", {}))

    def to_json(self) -> dict[str, Any]:
        return {
            "outcomes": {rule: dict(counts) for rule, counts in self.outcomes.items()},
            "lies": {rule: dict(counts) for rule, counts in self.lies.items()},
            "examples": {rule: dict(examples) for rule, examples in self.examples.items()},
            "latency_hdr": self.latencies.encode(),
            "latency_ms": {
                rule: self.latencies.summary(rule) for rule in self.latencies.histograms
            },
        }
