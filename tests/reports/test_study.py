"""The study's report: the chapter's table with the measured numbers beside its claims."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from ratelimit_harness.harness.checkers import check
from ratelimit_harness.harness.history import Operation, Outcome
from ratelimit_harness.limiters import Policy
from ratelimit_harness.reports import build

STUDY = Path(__file__).parent / "study.json"  # a full study's result (embedded Redis 7.0)


@pytest.fixture
def study_dir(tmp_path: Path) -> Path:
    run = tmp_path / "study-20261201-050826"
    run.mkdir()
    shutil.copy(STUDY, run / "study.json")
    (run / "manifest.json").write_text(json.dumps({"kind": "study", "name": ""}))
    return run


def test_the_summary_holds_the_table_beside_the_chapters_claims(study_dir: Path) -> None:
    written = build(study_dir, study_dir)
    assert [p.name for p in written] == ["summary.md", "memory.png", "report.html"]
    rows = {
        line.split(" | ")[1]: line
        for line in (study_dir / "summary.md").read_text().splitlines()
        if line.startswith("| ") and " | " in line[2:]
    }
    assert "| O(1) | 120 / 136 / 136 / 136 (flat: O(1)) |" in rows["fixed-window-lua"]
    assert (
        "| O(requests) | 152 / 536 / 5,224 / 133,984 (x881: O(requests)) |"
        in rows["sliding-log-lua"]
    )
    assert "| 200 (100 + 100) |" in rows["fixed-window-lua"]
    assert "4.977 % wrongly allowed, 4.598 % wrongly limited" in rows["sliding-counter-lua"]
    assert "101 queued: 1 at once, the last waits 60.0 s" in rows["leaky-bucket"]


def test_the_headline_says_what_was_measured_against_the_claim(study_dir: Path) -> None:
    build(study_dir, study_dir)
    summary = (study_dir / "summary.md").read_text()
    assert "1,000,000 sliding-log entries took 133.7 MB as one sorted set" in summary
    assert "against the chapter's ~40 MB" in summary
    assert "Cloudflare: 0.003 % of 400 million requests from 270,000 sources" in summary


def test_the_page_is_self_contained_with_the_table_and_the_plot(study_dir: Path) -> None:
    build(study_dir, study_dir)
    page = (study_dir / "report.html").read_text()
    assert "<table>" in page
    assert "sliding-counter-lua" in page
    assert "How each number was measured" in page
    assert "Violations" not in page
    assert re.findall(r'<img [^>]*src="data:image/png;base64,', page)
    assert "http://" not in page
    assert "https://" not in page
    assert (study_dir / "memory.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_the_verdicts_the_study_kept_are_counted_as_they_were_recorded(study_dir: Path) -> None:
    build(study_dir, study_dir)
    assert "Every decision made on Redis" not in (study_dir / "summary.md").read_text()
    policy = Policy.parse("fixed-window:limit=1,window=60")
    twice = [_allowed(0.5), _allowed(1.5)]  # two admitted in one window of one
    for name, history in (("bursts/fixed-window-lua", twice), ("cost/fixed-window-lua", twice[:1])):
        verdict = study_dir / "history" / f"{name}.verdict.json"
        verdict.parent.mkdir(parents=True, exist_ok=True)
        verdict.write_text(json.dumps(check(history, policy).to_json()))
    build(study_dir, study_dir)
    summary = (study_dir / "summary.md").read_text()
    assert "2 histories, 3 decisions, each judged" in summary
    assert ": 1 with a violation." in summary
    assert "Histories (decisions) by measurement: bursts 1 (2), cost 1 (1)" in summary
    assert "  bursts/fixed-window-lua (fixed-window:limit=1,window=60): over-admission 1" in summary
    assert "cost/fixed-window-lua (" not in summary


def _allowed(at: float) -> Operation:
    return Operation("study", "u", at, at, Outcome.ALLOWED)


def test_what_is_not_a_study_is_refused(study_dir: Path) -> None:
    (study_dir / "study.json").write_text(json.dumps({"kind": "load"}))
    with pytest.raises(ValueError, match="not a study's result"):
        build(study_dir, study_dir)
