"""A benchmark's record says whether its code differed from the commit: the docs and the
benchmarks' own records, which a benchmark writes as it runs, do not count."""

from __future__ import annotations

import pytest

from ratelimit_harness.reports import checkout


@pytest.mark.parametrize(
    ("status", "changed"),
    [
        ("", False),
        (" M docs/load.md\n M README.md", False),
        (" M bench/load_faults.jsonl\nM  bench/results.json", False),
        (" M bench/load_faults.jsonl\n M harness/load/system/app.py", True),
        (" M bench/load_faults.py", True),  # a benchmark's code is code
        (" M limiters/fixed_window/fixed_window.lua", True),
        ("R  bench/old.py -> bench/results.json", False),  # where it is now is what counts
        ("R  docs/old.md -> harness/moved.py", True),
    ],
)
def test_only_code_makes_a_record_dirty(
    status: str, changed: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(checkout, "git", lambda *args: status.strip())  # as git() gives it
    assert checkout.code_changed() is changed


def test_the_commit_is_the_checkouts_head() -> None:
    head = checkout.git("rev-parse", "HEAD")
    assert head.startswith(checkout.commit())
    assert len(checkout.commit()) >= 7
