"""The JavaScript limiters' table against the Python catalogue it mirrors, and against the
programs and the pinned ioredis in limiters/js/."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ratelimit_harness.limiters import CATALOGUE, js_catalogue
from ratelimit_harness.limiters.js_catalogue import FAULTS, HOME, JS_CATALOGUE, unavailable

NAMES = list(JS_CATALOGUE)


def test_every_program_in_limiters_js_is_in_the_table() -> None:
    assert sorted(path.stem for path in HOME.glob("*.js")) == sorted(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_a_program_expects_its_twins_flaws_for_its_twins_promise(name: str) -> None:
    program = JS_CATALOGUE[name]
    twin = CATALOGUE[program.twin]
    assert program.promise == twin.promise
    assert set(program.flaws) == set(twin.flaws)
    assert all(faults <= FAULTS for faults in program.needs.values())
    assert all(re.search(r"\bPart \d+", reason) for reason in program.flaws.values())


@pytest.mark.parametrize("name", NAMES)
def test_a_program_says_what_it_is_on_its_first_lines(name: str) -> None:
    first = JS_CATALOGUE[name].path.read_text().splitlines()[1]
    assert first.startswith(f"// {name}: ")


def test_ioredis_is_pinned_to_one_release_and_locked() -> None:
    wanted = json.loads((HOME / "package.json").read_text())["dependencies"]["ioredis"]
    locked = json.loads((HOME / "package-lock.json").read_text())["packages"]
    assert re.fullmatch(r"\d+\.\d+\.\d+", wanted)
    assert locked["node_modules/ioredis"]["version"] == wanted


def test_unavailable_says_what_is_missing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(js_catalogue, "HOME", tmp_path)
    monkeypatch.setattr("shutil.which", lambda _: "/usr/bin/node")
    assert "make js" in str(unavailable())
    (tmp_path / "node_modules" / "ioredis").mkdir(parents=True)
    assert unavailable() is None
    monkeypatch.setattr("shutil.which", lambda _: None)
    assert "node is not installed" in str(unavailable())


def expected_cell(name: str) -> str:
    """A program's flaws as limiters/js/README.md's table writes them."""
    needs = JS_CATALOGUE[name].needs
    cells = [f"{flaw} ({', '.join(sorted(faults)) or 'none'})" for flaw, faults in needs.items()]
    return ", ".join(cells) or "none"


def test_the_readme_table_is_the_catalogue() -> None:
    rows = re.findall(
        r"^\| `([a-z-]+)\.js` \|.*\| ([^|]+) \|$", (HOME / "README.md").read_text(), re.M
    )
    assert {name: cell.strip() for name, cell in rows} == {
        name: expected_cell(name) for name in NAMES
    }
