"""``junit.xml``: one test case per limiter and flaw (race-test), per kind (a race) or per rule
and check (load), failing exactly where a verdict does not match, the evidence as its text."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from reports.load import LoadRun, RuleResult
from reports.race import RaceTest, Row, Trace
from reports.tables import mismatch, trace_text
from reports.verdicts import KINDS, witness_text


@dataclass(frozen=True)
class Case:
    name: str
    failure: str | None = None  # the message; None when it passed
    text: str = ""  # the evidence: a trace or witnesses
    seconds: float = 0.0


def write(path: Path, suites: dict[str, list[Case]]) -> Path:
    root = ET.Element("testsuites", name="ratelimit-harness")
    for name, cases in suites.items():
        suite = ET.SubElement(root, "testsuite", name=name)
        for case in cases:
            element = ET.SubElement(
                suite, "testcase", classname=name, name=case.name, time=f"{case.seconds:.3f}"
            )
            if case.failure is not None:
                failure = ET.SubElement(element, "failure", message=case.failure, type="verdict")
                failure.text = case.text
            elif case.text:
                ET.SubElement(element, "system-out").text = case.text
        _count(suite, cases)
    _count(root, [c for cases in suites.values() for c in cases])
    ET.indent(root)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
    return path


def suites(run: RaceTest | Trace | LoadRun) -> dict[str, list[Case]]:
    if isinstance(run, RaceTest):
        return race_test_suites(run)
    if isinstance(run, Trace):
        return race_suites(run)
    return load_suites(run)


def race_test_suites(run: RaceTest) -> dict[str, list[Case]]:
    return {"race-test": [case for row in run.rows for case in _row_cases(row)]}


def race_suites(trace: Trace) -> dict[str, list[Case]]:
    text = trace_text(trace)
    return {
        f"race {trace.limiter}": [
            Case(f"{trace.limiter}[{kind}]", kind if kind in trace.violations else None, text)
            for kind in KINDS
        ]
    }


def load_suites(run: LoadRun) -> dict[str, list[Case]]:
    return {f"load {rule.name}": _rule_cases(rule) for rule in run.rules}


def _row_cases(row: Row) -> list[Case]:
    flaws = row.expected + [f for f in row.found if f not in row.expected]
    if not row.expected:
        flaws = ["clean"]
    seconds = row.seconds / len(flaws)
    reasons = {f: mismatch(row, f) for f in flaws}
    if not row.matches and not any(reasons.values()):  # the table says no; it does not say why
        reasons = dict.fromkeys(flaws, "the race-test reports this limiter as not matching")
    cases = []
    for flaw in flaws:
        trace = row.trace_for(flaw)
        text = trace_text(trace) if trace else "\n".join(t.text for t in row.traces)
        cases.append(Case(f"{row.name}[{flaw}]", reasons[flaw], text, seconds))
    return cases


def _rule_cases(rule: RuleResult) -> list[Case]:
    cases = []
    for kind in rule.kinds:
        found = [
            f"{side}: {witness_text(v)}"
            for side, verdict in (("instances", rule.server), ("clients", rule.client))
            for v in verdict.of_kind(kind)
        ]
        failure = f"{rule.count(kind)} {kind} ({rule.judged_by})" if found else None
        cases.append(Case(f"{rule.name}[{kind}]", failure, "\n".join(found)))
    lies = "\n".join(
        f"{kind} x{n}: {rule.header_lie_examples.get(kind, '')}"
        for kind, n in rule.header_lies.items()
        if n
    )
    cases.append(
        Case(f"{rule.name}[header-lies]", f"{rule.lies} header lies" if lies else None, lies)
    )
    return cases


def _count(element: ET.Element, cases: list[Case]) -> None:
    element.set("tests", str(len(cases)))
    element.set("failures", str(sum(c.failure is not None for c in cases)))
    element.set("errors", "0")
    element.set("skipped", "0")
    element.set("time", f"{sum(c.seconds for c in cases):.3f}")
