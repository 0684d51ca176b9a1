"""What every format shows of a run, once: one ``Report`` per run, which the terminal table,
``summary.md``, ``report.html`` and ``junit.xml`` each render and never build themselves.

A report has a headline, a table, a footer, the test cases JUnit lists (for a race-test, one
per limiter and flaw, as the table's rows), and the findings: each violation with its evidence.
This module holds those parts; each kind of run builds its own report in a module of its own:
``race_test_report``, ``race_report`` and ``load_report``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

CAUGHT, CLEAN, MISMATCH = "caught", "clean", "MISMATCH"
# the last line of summary.md and report.html
GLOSSARY = "The words of this report are defined in ratelimit-harness' docs/concepts.md."


@dataclass(frozen=True)
class Table:
    headers: list[str]
    rows: list[list[str]]


@dataclass(frozen=True)
class Finding:
    """One violation (or mismatch) with its evidence: a shrunk trace or witnesses."""

    title: str
    body: str
    image: str | None = None  # the plot that shows it, a file name in the output directory


@dataclass(frozen=True)
class Case:
    """One test case of ``junit.xml``: a limiter and flaw, a kind, a rule and check."""

    suite: str
    name: str
    failure: str | None = None  # the message; None when it passed
    text: str = ""  # the evidence: a trace or witnesses
    seconds: float = 0.0
    skipped: str | None = None  # why it could not be judged; None when it was


@dataclass(frozen=True)
class Report:
    """What the terminal, the page, the summary and the JUnit file show of one run."""

    title: str
    headline: str
    table: Table
    findings: list[Finding]
    findings_title: str | None = None  # a heading for the findings other than violations'
    cases: list[Case] = field(default_factory=list)
    footer: list[str] = field(default_factory=list)  # notes under the table, a paragraph each
