"""A report as the terminal shows it: the headline, the table in at most ``WIDTH`` columns, the
footer. When the table would be wider, the columns with the most room to give wrap their cells
at spaces (a word is never broken; a table of words wider than ``WIDTH`` stays wider)."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from ratelimit_harness.reports.tables import Report

WIDTH = 100
GAP = "  "  # between columns


def render(report: Report, width: int = WIDTH) -> str:
    def fill(text: str) -> str:
        return textwrap.fill(text, width, break_on_hyphens=False)

    shown = [fill(report.headline), table(report.table.headers, report.table.rows, width)]
    return "\n\n".join(shown + [fill(note) for note in report.footer])


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], width: int | None = WIDTH) -> str:
    """Left-aligned columns, two spaces apart, under a rule; a column narrowed to fit ``width``
    wraps its cells at spaces (``None``: as wide as the cells are, each as it is)."""
    if width is None:
        widths = [max(len(c) for c in column) for column in zip(headers, *rows, strict=True)]
        shown = [_line(row, widths) for row in rows]
    else:
        widths = _widths(headers, rows, width)
        shown = [line for row in rows for line in _wrapped(row, widths)]
    return "\n".join([_line(headers, widths), _line(["-" * w for w in widths], widths), *shown])


def _widths(headers: Sequence[str], rows: Sequence[Sequence[str]], width: int) -> list[int]:
    widths = [max(len(str(c)) for c in column) for column in zip(headers, *rows, strict=True)]
    # a column narrows to its longest word, never less: words are not broken
    floor = [
        max([len(h), *(len(word) for c in cells for word in str(c).split())])
        for h, *cells in zip(headers, *rows, strict=True)
    ]
    while sum(widths) + len(GAP) * (len(widths) - 1) > width:
        widest = max(range(len(widths)), key=lambda i: widths[i] - floor[i])
        if widths[widest] <= floor[widest]:
            break  # as narrow as it reads: wider than asked, then
        widths[widest] -= 1
    return widths


def _wrapped(row: Sequence[str], widths: list[int]) -> list[str]:
    cells = [
        textwrap.wrap(str(c), w, break_long_words=False, break_on_hyphens=False) or [""]
        for c, w in zip(row, widths, strict=True)
    ]
    height = max(map(len, cells))
    return [_line([c[n] if n < len(c) else "" for c in cells], widths) for n in range(height)]


def _line(cells: Sequence[str], widths: list[int]) -> str:
    return GAP.join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()
