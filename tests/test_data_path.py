"""docs/layout.md's data-path table and picture come from one list, scripts/data_path.py's
``RECORDS``: the page shows that list, and every file it names is one a run writes."""

from __future__ import annotations

from pathlib import Path

from ratelimit_harness.reports.marked import marked
from tests.scripts import ROOT, load_script

data_path = load_script("data_path")


def test_the_layout_page_shows_the_table_of_the_records() -> None:
    page = data_path.PAGE.read_text()
    shown = marked(page, data_path.BEGIN, data_path.END)
    assert shown == data_path.table(), "stale: python scripts/data_path.py"
    assert data_path.main(["--check"]) == 0


def test_the_picture_is_drawn_from_the_records(tmp_path: Path) -> None:
    drawn = data_path.draw(tmp_path / "data-path.png")
    assert drawn.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert (ROOT / "docs" / "data-path.png").is_file()


def test_every_file_of_the_records_is_named_in_the_code() -> None:
    code = "\n".join(
        path.read_text()
        for folder in ("harness", "reports")
        for path in (ROOT / folder).rglob("*.py")
    )
    for record in data_path.RECORDS:
        for name in record.path.replace(",", " ").split():
            # a name's fixed part: STEM.history.jsonl's history.jsonl, *.png's png
            fixed = name.split(".", 1)[1] if name.startswith(("STEM", "NAME", "*")) else name
            assert fixed.rstrip("/") in code, name
