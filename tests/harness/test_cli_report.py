"""``ratelimit-harness report``: the builders of ``reports/`` behind the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from ratelimit_harness.harness.cli import main

FIXTURES = Path(__file__).parents[1] / "reports" / "fixtures"


@pytest.mark.parametrize("run", sorted(p.name for p in FIXTURES.iterdir()))
def test_every_kind_of_run_gets_its_report(
    run: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", str(FIXTURES / run), "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out.split()
    assert printed[-1] == str(tmp_path / "report.html")
    for name in ("report.html", "summary.md", "junit.xml"):
        assert (tmp_path / name).stat().st_size > 0


@pytest.mark.parametrize(
    ("name", "message"),
    [("missing", "no such file or directory: "), ("", "not a run directory (no manifest.json)")],
)
def test_what_is_not_a_run_is_one_line_and_exit_2(
    name: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", str(tmp_path / name)]) == 2  # a missing path, an empty directory
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("error: ")
    assert message in line
