"""docs/tutorial.md is what scripts/tutorial.py wrote from its source (``make docs`` runs it
again): the files it shows are the source's, and every command it shows is one the harness takes
today."""

from __future__ import annotations

import re
import shlex

import pytest

from ratelimit_harness.harness.cli import parser
from tests.scripts import load_script

tutorial = load_script("tutorial")
PAGE = tutorial.PAGE.read_text(encoding="utf-8")
COMMANDS = re.findall(r"^\$ ratelimit-harness (.+)$", PAGE, re.MULTILINE)


def test_the_page_shows_the_files_its_source_writes() -> None:
    written = tutorial.files(tutorial.SOURCE.read_text(encoding="utf-8"))
    assert list(written) == ["mylimiter.py", "test_mylimiter.py"]
    assert len(written["mylimiter.py"]) == 2  # with its flaw, then fixed
    for name, versions in written.items():
        for text in versions:
            assert f"# {name}\n{text}" in PAGE


def test_the_page_shows_each_step_run_with_what_it_printed() -> None:
    assert len(COMMANDS) >= 6
    assert "reproduced: immortal-key" in PAGE  # the race's trace broke the limiter again
    assert ": no violation in " in PAGE  # the fixed limiter is clean
    assert "fault kill-instance on app-0" in PAGE  # the load run met its fault
    assert PAGE.count("(exit code 1)") == 2  # the race that found flaws, and the replay


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_of_the_page_is_one_the_harness_takes(command: str) -> None:
    parser().parse_args(shlex.split(command))  # argparse exits 2 on what it does not take
