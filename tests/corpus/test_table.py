"""The corpus table is whole and says the same as docs/corpus.md and the ``corpus`` extra; these
need no library of the corpus installed (its wrappers import theirs only when called)."""

from __future__ import annotations

import importlib
import re
import tomllib
from pathlib import Path

from corpus.install import ROOT
from corpus.page import BEGIN, END, PAGE, render
from corpus.table import ROWS
from ratelimit_harness.limiters.catalogue import Flaw
from ratelimit_harness.reports.marked import marked

FAULTS = {"crash", "stall", "skew"}


def test_the_corpus_page_shows_the_table_as_the_table_module_renders_it() -> None:
    page = PAGE.read_text()
    assert page.count(BEGIN) == 1, "docs/corpus.md has no corpus table (python -m corpus.page)"
    assert marked(page, BEGIN, END) == render(), "stale: python -m corpus.page --write"


def test_the_corpus_extra_holds_exactly_the_shared_rows_pins() -> None:
    project = tomllib.loads(Path(ROOT / "pyproject.toml").read_text())["project"]
    shared = {pin for row in ROWS if row.in_corpus_extra for pin in row.pins}
    assert set(project["optional-dependencies"]["corpus"]) == shared


def test_at_least_eight_releases_some_expected_caught_some_clean() -> None:
    assert len({row.library for row in ROWS}) >= 8
    assert any(row.expected for row in ROWS)
    assert any(not row.expected for row in ROWS)


def test_every_row_names_a_wrapper_pinned_releases_and_faults_it_may_draw() -> None:
    for row in ROWS:
        if row.runtime == "node":
            assert row.wrapper.startswith("exec:node corpus/npm/"), row.name
            assert (ROOT / row.wrapper.removeprefix("exec:node ")).is_file(), row.name
            assert all(re.fullmatch(r"@?[a-z0-9./-]+@\d+\.\d+\.\d+", pin) for pin in row.pins)
        else:
            module, _, attribute = row.wrapper.partition(":")
            assert callable(getattr(importlib.import_module(module), attribute)), row.name
            assert all(pin.count("==") == 1 for pin in row.pins), row.name
        allowed = set() if row.nemesis == "none" else set(row.nemesis.split(","))
        assert allowed <= FAULTS, row.name
        for kind, faults in row.expected.items():
            assert kind in set(Flaw), (row.name, kind)
            assert faults <= allowed, f"{row.name}: {kind} needs a fault the row leaves out"


def test_the_npm_rows_are_five_releases_or_more_each_in_a_directory_of_its_own() -> None:
    npm = [row for row in ROWS if row.runtime == "node"]
    assert len({row.library for row in npm}) >= 5
    assert all(not row.in_corpus_extra and row.directory.startswith(".corpus/npm/") for row in npm)
    assert {row.runtime for row in ROWS} == {"python", "node"}


def test_rows_of_one_release_share_its_directory_and_pins() -> None:
    pins_of: dict[str, tuple[str, ...]] = {}
    for row in ROWS:
        assert pins_of.setdefault(row.directory, row.pins) == row.pins, row.name
    assert len({row.slug for row in ROWS}) == len(ROWS)
