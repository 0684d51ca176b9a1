"""A block of a Markdown page that a script writes, between two HTML comments that Markdown does
not show: docs/corpus.md's table (``python -m corpus.page``), docs/layout.md's data path
(``scripts/data_path.py``). The script renders the block, its markers included; a test holds the
page to what it renders. (The docs' bench figures have blocks of their own: ``bench_docs``.)"""

from __future__ import annotations

from pathlib import Path


def marked(page: str, begin: str, end: str) -> str:
    """The block ``page`` holds from ``begin`` to ``end``, markers included ("" if none)."""
    if begin not in page or end not in page:
        return ""
    return page[page.index(begin) : page.index(end) + len(end)]


def put_marked(path: Path, block: str, begin: str, end: str) -> None:
    """Write ``block`` (its markers included) in place of the one ``path`` holds; ValueError,
    in one line, when it holds none."""
    page = path.read_text(encoding="utf-8")
    old = marked(page, begin, end)
    if not old:
        raise ValueError(f"{path} has no block marked {begin}")
    path.write_text(page.replace(old, block), encoding="utf-8")
