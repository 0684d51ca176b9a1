"""``python -m ratelimit_harness.reports.bench_docs [--check]``: the figures the docs quote,
rendered from ``bench/results.json`` (``make bench`` writes it; bench/table.py holds its contract).

A figure block of a page (README.md, docs/*.md) sits between ``begin(name)`` and ``end(name)``,
two HTML comments Markdown does not show, and holds what ``reports.bench_blocks.BLOCKS[name]``
renders from the results file: the figures, with the date and the commit they were measured on.
Without ``--check`` every block that differs is rendered anew and the pages changed are named;
with ``--check`` nothing is written, and the exit code is 1 when a block differs (a test holds the
committed docs to the committed results, so a figure typed by hand fails). Exit 2, in one line:
no readable results file, a block of no known name, or one left open.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from ratelimit_harness.reports.bench_blocks import BLOCKS, Benches

ROOT = Path(__file__).resolve().parent.parent  # the checkout
RESULTS = ROOT / "bench" / "results.json"
_OPENING = "<!-- bench figures: "
_BLOCK = re.compile(
    rf"{_OPENING}(?P<name>[\w-]+) .*?-->\n.*?<!-- end of bench figures: (?P=name) -->", re.S
)


def begin(name: str) -> str:
    return f"{_OPENING}{name} (make bench renders them from bench/results.json) -->"


def end(name: str) -> str:
    return f"<!-- end of bench figures: {name} -->"


def render(name: str, benches: Benches) -> str:
    """Block ``name``, markers included, as it must read on a page."""
    return f"{begin(name)}\n{BLOCKS[name](benches)}\n{end(name)}"


def rendered(text: str, benches: Benches) -> tuple[str, list[str]]:
    """``text`` with every block rendered anew, and the names of those that changed.
    ValueError for a block of no known name or one with no end."""
    if text.count(_OPENING) != len(_BLOCK.findall(text)):
        raise ValueError("a bench figures block has no end marker, or a misspelt one")
    changed = []

    def anew(block: re.Match[str]) -> str:
        name = block["name"]
        if name not in BLOCKS:
            raise ValueError(f"no bench figures block is called {name!r}: {', '.join(BLOCKS)}")
        fresh = render(name, benches)
        if fresh != block[0]:
            changed.append(name)
        return fresh

    return _BLOCK.sub(anew, text), changed


def blocks_in(text: str) -> list[str]:
    return [block["name"] for block in _BLOCK.finditer(text)]


def pages(root: Path) -> list[Path]:
    listed = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    return [page for page in listed if page.exists()]


def read_results(path: Path) -> Benches:
    """The ``benches`` of a results file; ValueError, in one line, when it cannot be read."""
    try:
        benches: Benches = json.loads(path.read_text())["benches"]
    except OSError as error:
        raise ValueError(f"{path}: {error.strerror}; make bench writes it") from None
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(f"{path}: not a results file of bench/table.py ({error})") from None
    return benches


def stale(root: Path) -> dict[Path, list[str]]:
    """Each page of ``root`` whose blocks differ from ``root/bench/results.json``, and which."""
    benches = read_results(root / "bench" / "results.json")
    found = {page: rendered(page.read_text(), benches)[1] for page in pages(root)}
    return {page: names for page, names in found.items() if names}


def rewrite(root: Path) -> list[Path]:
    """Render every block of ``root``'s pages from its results file; the pages changed."""
    benches = read_results(root / "bench" / "results.json")
    written = []
    for page in pages(root):
        text, changed = rendered(page.read_text(), benches)
        if changed:
            page.write_text(text)
            written.append(page)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__)
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if stale")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout (default: this)")
    args = parser.parse_args(argv)
    try:
        if args.check:
            behind = stale(args.root)
            for page, names in behind.items():
                print(f"{page.relative_to(args.root)}: stale {', '.join(names)}")
            if behind:
                print(f"python -m {__spec__.name} renders them from bench/results.json")
                return 1
            print("the docs' figures are those of bench/results.json")
            return 0
        for page in rewrite(args.root):
            print(f"rewrote the figures of {page.relative_to(args.root)}")
    except (ValueError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
