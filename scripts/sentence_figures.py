"""How long the sentences of the docs are: a measure to read, not a gate.

For each Markdown file given (README.md and docs/*.md by default), it prints the number of
sentences, their average length in words, how many are over 40 words, and the longest. Only
prose counts: code blocks, tables, headings and HTML are left out, and inline code counts as
one word.

    python scripts/sentence_figures.py [FILE ...]
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LONG = 40  # words: a sentence over this is hard to read in one go
_CODE_MARK = "\x00"  # an inline code span while the sentences are split: it may begin one
_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`*(\[\"\x00])")  # a sentence ends, the next begins
_CODE = re.compile(r"`[^`]*`")
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")  # [text](target): its text
_ITEM = re.compile(r"^([-*]|\d+\.)\s+")  # a list item's mark


@dataclass(frozen=True)
class Figures:
    sentences: int
    average: float
    long: int
    longest: int


def prose(text: str) -> list[str]:
    """The paragraphs of ``text`` that are prose, each on one line."""
    paragraphs, current, fenced = [], [], False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("```"):
            fenced = not fenced
            continue
        skipped = stripped.startswith(("#", "|", "<")) or not stripped
        if fenced or skipped:
            if current:
                paragraphs.append(" ".join(current))
            current = []
            continue
        if _ITEM.match(stripped) and current:  # a list item is a paragraph of its own
            paragraphs.append(" ".join(current))
            current = []
        current.append(_ITEM.sub("", stripped))
    if current:
        paragraphs.append(" ".join(current))
    return paragraphs


def sentences(text: str) -> list[str]:
    found = []
    for paragraph in prose(text):
        plain = _LINK.sub(r"\1", _CODE.sub(_CODE_MARK, paragraph))
        found += [each.replace(_CODE_MARK, "code") for each in _END.split(plain) if each.strip()]
    return found


def figures(text: str) -> Figures:
    lengths = [len(each.split()) for each in sentences(text)]
    if not lengths:
        return Figures(0, 0.0, 0, 0)
    long = sum(length > LONG for length in lengths)
    return Figures(len(lengths), sum(lengths) / len(lengths), long, max(lengths))


def main(paths: list[str]) -> int:
    files = [Path(p) for p in paths] or [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    over = f"over {LONG}"
    print(f"{'file':<28} {'sentences':>9} {'words/sentence':>14} {over:>8} {'longest':>7}")
    for path in files:
        shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        f = figures(path.read_text())
        print(f"{shown!s:<28} {f.sentences:>9} {f.average:>14.1f} {f.long:>8} {f.longest:>7}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
