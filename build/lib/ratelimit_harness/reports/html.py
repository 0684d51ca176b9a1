"""``report.html``: one page that opens with no network: inline CSS, every image a data URI,
no script, no font to fetch."""

from __future__ import annotations

import base64
from html import escape
from pathlib import Path

from ratelimit_harness.reports.tables import CAUGHT, CLEAN, GLOSSARY, MISMATCH, Report, Table

_RESULTS = (CAUGHT, CLEAN, MISMATCH)
_CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1400px; color: #222; }
table { border-collapse: collapse; margin: 1em 0; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: left; }
th { background: #f2f2f2; }
td.caught, td.clean { background: #e6f4ea; } td.MISMATCH { background: #fce8e6; font-weight: bold; }
pre { background: #f7f7f7; border: 1px solid #ddd; padding: .6em; overflow-x: auto;
      font-size: 12px; }
img { max-width: 100%; border: 1px solid #eee; margin: .5em 0; }
section { margin-bottom: 1.5em; }
"""


def write(path: Path, report: Report, plots: list[Path]) -> Path:
    title, findings = report.title, report.findings
    images = {p.name: p for p in plots}
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
        f"<p>{escape(report.headline)}</p>",
        _table(report.table),
        *(f"<p>{escape(note)}</p>" for note in report.footer),
    ]
    shown = {f.image for f in findings if f.image}
    rest = [p for p in plots if p.name not in shown]
    if rest:
        parts.append("<h2>Plots</h2>")
        parts.extend(_image(p) for p in rest)
    if findings:
        heading = report.findings_title or "Violations and their evidence"
        parts.append(f"<h2>{escape(heading)}</h2>")
    for finding in findings:
        parts.append(f"<section><h3>{escape(finding.title)}</h3>")
        if finding.image and finding.image in images:
            parts.append(_image(images[finding.image]))
        parts.append(f"<pre>{escape(finding.body)}</pre></section>")
    parts += [f"<footer><p>{escape(GLOSSARY)}</p></footer>", "</body></html>"]
    path.write_text("\n".join(parts) + "\n")
    return path


def _table(table: Table) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in table.headers)
    rows = "".join("<tr>" + "".join(_cell(c) for c in row) + "</tr>" for row in table.rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


def _cell(text: str) -> str:
    """A cell; a verdict's result (caught, clean, MISMATCH) coloured as such."""
    marked = f' class="{text}"' if text in _RESULTS else ""
    return f"<td{marked}>{escape(text)}</td>"


def _image(path: Path) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<img alt="{escape(path.stem)}" src="data:image/png;base64,{data}">'
