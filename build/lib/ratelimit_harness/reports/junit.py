"""``junit.xml``: a report's test cases (``Report.cases``), a suite each, failing exactly where a
verdict does not match, the evidence as each case's text."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from ratelimit_harness.reports.tables import Case, Report


def write(path: Path, report: Report) -> Path:
    root = ET.Element("testsuites", name="ratelimit-harness")
    suites: dict[str, list[Case]] = {}
    for case in report.cases:
        suites.setdefault(case.suite, []).append(case)
    for name, cases in suites.items():
        suite = ET.SubElement(root, "testsuite", name=name)
        for case in cases:
            element = ET.SubElement(
                suite, "testcase", classname=name, name=case.name, time=f"{case.seconds:.3f}"
            )
            if case.skipped is not None:
                ET.SubElement(element, "skipped", message=case.skipped)
            elif case.failure is not None:
                failure = ET.SubElement(element, "failure", message=case.failure, type="verdict")
                failure.text = case.text
            elif case.text:
                ET.SubElement(element, "system-out").text = case.text
        _count(suite, cases)
    _count(root, report.cases)
    ET.indent(root)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
    return path


def _count(element: ET.Element, cases: list[Case]) -> None:
    element.set("tests", str(len(cases)))
    element.set("failures", str(sum(c.failure is not None for c in cases)))
    element.set("errors", "0")
    element.set("skipped", str(sum(c.skipped is not None for c in cases)))
    element.set("time", f"{sum(c.seconds for c in cases):.3f}")
