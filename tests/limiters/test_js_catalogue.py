"""The JavaScript limiters' table against the Python catalogue it mirrors, and against the
programs and the pinned ioredis in limiters/js/."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from ratelimit_harness.limiters import CATALOGUE, js_catalogue
from ratelimit_harness.limiters.js_catalogue import FAULTS, HOME, JS_CATALOGUE, install, unavailable

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


def test_install_copies_the_programs_into_the_cache_once(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # a wheel ships the programs without node_modules: install() runs npm ci in a copy of them
    shipped = tmp_path / "js"
    shipped.mkdir()
    (shipped / "naive-get-set.js").write_text("// the program")
    (shipped / "package-lock.json").write_text("{}")
    tools = tmp_path / "bin"
    tools.mkdir()
    runs = tmp_path / "npm-runs"
    for name, script in (
        ("node", ""),
        ("npm", f"mkdir -p node_modules/ioredis; echo $* >> {runs}"),
    ):
        (tools / name).write_text(f"#!/bin/sh\n{script}\n")
        (tools / name).chmod(0o755)
    monkeypatch.setattr(js_catalogue, "HOME", shipped)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", f"{tools}:{os.environ['PATH']}")
    said: list[str] = []
    assert js_catalogue.home() == shipped
    assert install(said.append) is None
    copy = js_catalogue.home()
    assert copy.parent == tmp_path / "cache" / "ratelimit-harness"
    assert (copy / "naive-get-set.js").read_text() == "// the program"
    assert JS_CATALOGUE["naive-get-set"].path == copy / "naive-get-set.js"
    assert install(said.append) is None  # installed already: npm is not run again
    assert runs.read_text().split() == [
        "ci",
        "--omit=dev",
        "--no-audit",
        "--no-fund",
        "--loglevel=error",
    ]
    assert len(said) == 1
    assert [p.name for p in copy.parent.iterdir()] == [copy.name]  # no partial copy left
