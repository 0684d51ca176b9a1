"""``summary.md``: the headline and the verdict table, for a CI job summary or a PR comment."""

from __future__ import annotations

from pathlib import Path

from ratelimit_harness.reports.tables import GLOSSARY, Report, Table

_MARK = {"caught": "✅ caught", "clean": "✅ clean", "MISMATCH": "❌ MISMATCH"}


def write(path: Path, report: Report) -> Path:
    lines = [f"## {report.title}", "", report.headline, "", *_table(report.table)]
    for note in report.footer:
        lines += ["", note]
    if report.findings:
        heading = report.findings_title or "Evidence: traces and witnesses"
        lines += ["", f"<details><summary>{heading}</summary>", ""]
        for finding in report.findings:
            lines += [f"**{finding.title}**", "", "```", finding.body, "```", ""]
        lines.append("</details>")
    lines += ["", f"<sub>{GLOSSARY}</sub>"]
    path.write_text("\n".join(lines) + "\n")
    return path


def _table(table: Table) -> list[str]:
    return table_lines(
        table.headers, [[_MARK.get(cell, cell) for cell in row] for row in table.rows]
    )


def table_lines(headers: list[str], rows: list[list[str]]) -> list[str]:
    """A Markdown table, one string per line; a ``|`` in a cell is escaped."""
    return [_line(headers), _line(["---"] * len(headers)), *(_line(row) for row in rows)]


def _line(cells: list[str]) -> str:
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"
