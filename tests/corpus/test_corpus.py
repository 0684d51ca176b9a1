"""The corpus raced: each released limiter gets the verdict its row expects, found by the race
command a user runs (``make corpus``; the rows are installed first, by ``corpus.install``)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from corpus.install import installed
from corpus.page import verdict
from corpus.race import race
from corpus.table import ROWS, Row

pytestmark = pytest.mark.corpus


@pytest.mark.parametrize("row", ROWS, ids=[row.slug for row in ROWS])
def test_a_released_limiter_gets_the_verdict_its_row_expects(row: Row, tmp_path: Path) -> None:
    if row.runtime == "node":
        require_node()
    assert installed(row), f"{' '.join(row.pins)} is not installed: make corpus"
    raced = race(row, tmp_path)
    found = f"expected {verdict(row.expected)}, found {raced.said()}"
    if row.waits_for:
        # the row's true verdict needs engine work this tree lacks: once that lands, the race
        # matches and this fails, so that the row is cleared of what it waited for
        assert not raced.matches(row), f"{found}: it waits for nothing now; clear waits_for"
        pytest.xfail(f"waits for {'; '.join(row.waits_for)} ({found})")
    assert raced.matches(row), f"{found}\n{raced.output[-4000:]}"


def require_node() -> None:
    """Skip where node or npm is missing, or fail where HARNESS_REQUIRE_ALL_PATHS=1."""
    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    if not missing:
        return
    why = f"{' and '.join(missing)} not on PATH"
    if os.environ.get("HARNESS_REQUIRE_ALL_PATHS") == "1":
        pytest.fail(f"the npm rows are required but cannot run: {why}")
    pytest.skip(f"the npm rows cannot run: {why}")
