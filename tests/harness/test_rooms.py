"""The rooms inside a stage of the harness, and which may import which (docs/layout.md).

A stage of many modules (the explorer) is split into subpackages, its *rooms*. The rooms are in
layers, lowest first. A module may import its own room and any room of a lower layer; rooms of
one layer are independent of each other. The modules at the top of the stage sit above every
room: no room imports them. Found by reading every import of every module, lazy ones included.
"""

from __future__ import annotations

import ast
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness.support import ROOT

PACKAGE = "ratelimit_harness.harness"
# each stage's rooms, in layers, lowest first (docs/layout.md draws them)
LAYERS: dict[str, tuple[tuple[str, ...], ...]] = {
    "explorer": (
        ("server", "clocks"),
        ("wire",),
        ("instances",),
        ("schedule",),
        ("search",),
    ),
    "checkers": (
        ("view",),
        ("shared", "figures"),
        ("placement",),
        ("policies",),
        ("compose",),
        ("stream",),
    ),
    "load": (
        ("contract",),
        ("system",),
        ("faults",),
        ("judge",),
        ("web",),
        ("traffic",),
    ),
}
TOP = len(max(LAYERS.values(), key=len))  # the layer of a stage's own top-level modules


def imported(path: Path) -> Iterator[str]:
    """Every module ``path`` imports by its full name, a ``from PACKAGE import NAME`` as
    ``PACKAGE.NAME`` (NAME may be a module)."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.module
            yield from (f"{node.module}.{alias.name}" for alias in node.names)


def layer_of(stage: str, name: str) -> int:
    """The layer of the module ``name`` (dotted, below the stage): ``TOP`` for a top-level
    module of the stage."""
    for layer, rooms in enumerate(LAYERS[stage]):
        if name.split(".", maxsplit=1)[0] in rooms:
            return layer
    return TOP  # a top-level module, or a room the layers do not name


def upward(stage: str, folder: Path) -> list[str]:
    """Each import of a module of a room in ``folder`` (the stage's) that goes to a room of its
    layer or above, in words."""
    found = []
    prefix = f"{PACKAGE}.{stage}."
    for path in sorted(folder.rglob("*.py")):
        own = path.relative_to(folder).with_suffix("").parts
        if len(own) < 2:
            continue  # a top-level module may import any room
        room, own_layer = own[0], layer_of(stage, own[0])
        if own_layer == TOP:
            found.append(f"{path.relative_to(folder)} is in a room of no layer")
            continue
        for name in set(imported(path)):
            if not name.startswith(prefix):
                continue
            target = name.removeprefix(prefix)
            layer = layer_of(stage, target)
            if target.split(".")[0] != room and layer >= own_layer:
                found.append(f"{path.relative_to(folder)} imports {target}")
    return found


@pytest.mark.parametrize("stage", sorted(LAYERS))
def test_no_room_imports_a_room_of_its_layer_or_above(stage: str) -> None:
    assert upward(stage, ROOT / "harness" / stage) == []


@pytest.mark.parametrize("stage", sorted(LAYERS))
def test_every_room_is_a_package_with_a_docstring_that_says_what_it_may_import(
    stage: str,
) -> None:
    for rooms in LAYERS[stage]:
        for room in rooms:
            init = ROOT / "harness" / stage / room / "__init__.py"
            docstring = ast.get_docstring(ast.parse(init.read_text())) or ""
            assert "May import:" in docstring, init


def test_an_import_from_a_lower_room_to_a_higher_one_is_found(tmp_path: Path) -> None:
    """The rule holds, on a copy of the explorer: a module of the wire that imports the search
    is named, and so is one of the server that imports the clocks (one layer)."""
    copy = tmp_path / "explorer"
    shutil.copytree(ROOT / "harness" / "explorer", copy)
    (copy / "wire" / "planted.py").write_text(
        f"def later():\n    from {PACKAGE}.explorer.search import bounded\n"
    )
    (copy / "server" / "planted.py").write_text(f"import {PACKAGE}.explorer.clocks.virtual\n")
    assert sorted(upward("explorer", copy)) == [
        "server/planted.py imports clocks.virtual",
        "wire/planted.py imports search",
        "wire/planted.py imports search.bounded",
    ]


MOST_MODULES = 15  # in one folder of the harness
SHARED_PREFIX = 3  # modules of one folder whose names begin with one word and an underscore


def test_no_folder_of_the_harness_holds_too_many_modules_or_a_prefix_waiting_to_be_a_room() -> None:
    """A name prefix shared by several modules (``streamed_``, ``fault_``) is a room waiting to
    be made; more than 15 modules in one folder, rooms not yet made."""
    crowded, prefixed = [], []
    for folder in sorted({path.parent for path in (ROOT / "harness").rglob("*.py")}):
        names = [path.stem for path in folder.glob("*.py") if path.stem != "__init__"]
        if len(names) > MOST_MODULES:
            crowded.append(f"{folder.relative_to(ROOT)}: {len(names)} modules")
        words = [name.split("_")[0] for name in names if "_" in name]
        for word in sorted(set(words)):
            sharing = [name for name in names if name == word or name.startswith(f"{word}_")]
            if len(sharing) >= SHARED_PREFIX:
                prefixed.append(f"{folder.relative_to(ROOT)}: {', '.join(sorted(sharing))}")
    assert crowded == []
    assert prefixed == []
