"""Every link between the README and the docs lands: on a file that exists and, after a ``#``,
on one of its headings (named as GitHub names a heading's anchor)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = _FENCE.sub("", page.read_text(encoding="utf-8"))
    return {anchor(line.lstrip("#")) for line in text.splitlines() if line.startswith("#")}


def links(page: Path) -> list[str]:
    text = _FENCE.sub("", page.read_text(encoding="utf-8"))
    return [t for t in _LINK.findall(text) if not re.match(r"[a-z]+:", t)]


def test_a_heading_is_named_as_github_names_it() -> None:
    assert anchor(" Faults under load: `--nemesis`") == "faults-under-load---nemesis"
    assert anchor("A limiter in any language: `exec:COMMAND`") == (
        "a-limiter-in-any-language-execcommand"
    )


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_link_of_a_page_lands(page: Path) -> None:
    broken = []
    for target in links(page):
        path, _, fragment = target.partition("#")
        where = (page.parent / path).resolve() if path else page
        if not where.exists():
            broken.append(f"{target}: no such file")
        elif fragment and where.suffix == ".md" and fragment not in anchors(where):
            broken.append(f"{target}: no such heading")
    assert not broken, broken
