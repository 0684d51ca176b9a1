from pathlib import Path

import pytest

from ratelimit_harness.reports.marked import marked, put_marked

BEGIN, END = "<!-- a table -->", "<!-- end of a table -->"


def test_a_marked_block_is_found_and_written_in_place(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(f"Before.\n\n{BEGIN}\nold\n{END}\n\nAfter.\n")
    assert marked(page.read_text(), BEGIN, END) == f"{BEGIN}\nold\n{END}"
    put_marked(page, f"{BEGIN}\nnew\n{END}", BEGIN, END)
    assert page.read_text() == f"Before.\n\n{BEGIN}\nnew\n{END}\n\nAfter.\n"


def test_a_page_without_the_block_is_refused_in_one_line(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(f"{BEGIN}\nnever ended\n")
    assert marked(page.read_text(), BEGIN, END) == ""
    with pytest.raises(ValueError, match=r"page\.md has no block marked <!-- a table -->"):
        put_marked(page, "x", BEGIN, END)
    assert page.read_text() == f"{BEGIN}\nnever ended\n"
