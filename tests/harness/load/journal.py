"""A journal a test writes as an app instance or a Locust process would, on a clock it moves."""

from __future__ import annotations

from pathlib import Path

from ratelimit_harness.harness.history import Outcome, Recorder
from tests.clocks import START, ManualClock

OPEN: list[Recorder] = []  # the journals a test opened; the conftest closes them after it


class Journal:
    """``RUN_DIR/journals/SIDE/RULE/PROCESS-1.jsonl``; times are seconds after ``START``."""

    def __init__(self, run_dir: Path, rule: str, *, side: str = "server", process: str = "app-0"):
        self.path = run_dir / "journals" / side / rule / f"{process}-1.jsonl"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.clock = ManualClock()
        self.recorder = Recorder(self.path, process, clock=self.clock)
        OPEN.append(self.recorder)

    def invoke(self, key: str, at: float) -> int:
        self.clock.now = START + at
        return self.recorder.invoke(key)

    def complete(self, token: int, outcome: Outcome, at: float, now: float | None = None) -> None:
        self.clock.now = START + at
        self.recorder.complete(token, outcome, None if now is None else START + now)

    def decide(
        self, key: str, outcome: Outcome, at: float, took: float = 0.001, now: float | None = None
    ) -> int:
        token = self.invoke(key, at)
        self.complete(token, outcome, at + took, now)
        return token

    def give_back(self, token: int, at: float, took: float | None = 0.001) -> None:
        """Give back ``token`` at ``at``; ``took`` None: the give-back never answers."""
        self.clock.now = START + at
        self.recorder.give_back(token)
        if took is not None:
            self.clock.now = START + at + took
            self.recorder.given_back(token)
