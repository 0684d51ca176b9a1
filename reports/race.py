"""A saved race (``runs/race-NAME-TIME.json``) and a race-test run directory, read back."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reports.verdicts import Verdict, verdict

TABLE = "race-test.json"
_STEP = re.compile(r"^\s*(\d+)\.\s+(\S+)\s+t=(-?[0-9.]+)\s+(.*?)\s*$")


@dataclass(frozen=True)
class Step:
    """One numbered line of a trace: who (``-`` for nobody), their clock, what happened."""

    number: int
    process: str
    t: float
    text: str


@dataclass(frozen=True)
class Trace:
    path: Path
    limiter: str
    policy: str
    judged_by: str
    instances: int
    violations: list[str]
    lines: list[str]
    verdict: Verdict

    @property
    def steps(self) -> list[Step]:
        steps = []
        for line in self.lines:
            m = _STEP.match(line)
            if m:
                steps.append(Step(int(m[1]), m[2], float(m[3]), m[4]))
        return steps

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


@dataclass(frozen=True)
class Row:
    """One limiter of the race-test table: what the catalogue expects, what the search found."""

    name: str
    policy: str
    expected: list[str]
    found: list[str]
    matches: bool
    how: list[str]
    examples: int
    seconds: float
    trace_steps: int | None
    traces: list[Trace]
    stress_found: list[str]
    replays_that_failed: list[str]

    def trace_for(self, flaw: str) -> Trace | None:
        return next((t for t in self.traces if flaw in t.violations), None)


@dataclass(frozen=True)
class RaceTest:
    directory: Path
    all_match: bool
    rows: list[Row]


def read_trace(path: Path) -> Trace:
    try:
        data = json.loads(path.read_text())
    except ValueError as e:
        raise ValueError(f"{path}: not JSON ({e})") from None
    if not isinstance(data, dict) or "trace" not in data:
        raise ValueError(f"{path}: not a saved race (no trace)")
    return Trace(
        path=path,
        limiter=str(data.get("limiter", path.stem)),
        policy=str(data.get("policy", "")),
        judged_by=str(data.get("judged_by") or data.get("policy", "")),
        instances=int(data.get("instances", 2)),
        violations=[str(v) for v in data.get("violations", [])],
        lines=[str(line) for line in data.get("trace", [])],
        verdict=verdict(data.get("verdict", {})),
    )


def read_race_test(directory: Path) -> RaceTest:
    """The table is ``race-test.json`` in the directory; older runs kept it beside the
    directory (``runs/race-test.json``), which is used when its traces point into this one;
    without a table, each trace stands for one flaw expected and found."""
    table = _table(directory)
    if table is None:
        return _from_traces(directory)
    rows = [_row(directory, r) for r in table.get("rows", [])]
    return RaceTest(directory, bool(table.get("all_match", all(r.matches for r in rows))), rows)


def _table(directory: Path) -> dict[str, Any] | None:
    inside = directory / TABLE
    if inside.exists():
        return dict(json.loads(inside.read_text()))
    beside = directory.parent / TABLE
    if beside.exists():
        table = dict(json.loads(beside.read_text()))
        traces = [t for r in table.get("rows", []) for t in r.get("traces", [])]
        if traces and all(Path(t).parent.name == directory.name for t in traces):
            return table
    return None


def _row(directory: Path, data: dict[str, Any]) -> Row:
    paths = [directory / Path(t).name for t in data.get("traces", [])]
    return Row(
        name=str(data["name"]),
        policy=str(data.get("policy", "")),
        expected=[str(f) for f in data.get("expected_flaws", [])],
        found=[str(f) for f in data.get("found_flaws", [])],
        matches=bool(data.get("matches", False)),
        how=[str(h) for h in data.get("how", [])],
        examples=int(data.get("examples", 0)),
        seconds=float(data.get("seconds", 0.0)),
        trace_steps=data.get("trace_steps"),
        traces=[read_trace(p) for p in paths if p.exists()],
        stress_found=[str(f) for f in data.get("stress_found_flaws", [])],
        replays_that_failed=[str(r) for r in data.get("replays_that_failed", [])],
    )


def _from_traces(directory: Path) -> RaceTest:
    rows: dict[str, list[Trace]] = {}
    for path in sorted(directory.glob("*.json")):
        try:
            trace = read_trace(path)
        except ValueError:
            continue  # not a saved race
        rows.setdefault(trace.limiter, []).append(trace)
    if not rows:
        raise ValueError(f"{directory}: neither {TABLE} nor a saved race in it")
    return RaceTest(
        directory,
        True,
        [
            Row(
                name=name,
                policy=traces[0].policy,
                expected=sorted({f for t in traces for f in t.violations}),
                found=sorted({f for t in traces for f in t.violations}),
                matches=True,
                how=[],
                examples=0,
                seconds=0.0,
                trace_steps=min(len(t.steps) for t in traces),
                traces=traces,
                stress_found=[],
                replays_that_failed=[],
            )
            for name, traces in rows.items()
        ],
    )
