"""Finding where code keeps a clock touches nothing else: no lazy object is woken, a class
that refuses a new attribute is left as it is, and a module is searched again once it changes."""

import sys
import time
from types import FunctionType, ModuleType
from typing import Any, cast

import pytest

from ratelimit_harness.harness.explorer.clocks.kept import Attribute, Defaults, Finder, Table, swap
from ratelimit_harness.harness.explorer.clocks.virtual import patched


class Wakes:
    """A lazy object (as a settings proxy is): any use of it but its identity fails."""

    def __getattribute__(self, name: str) -> Any:
        raise AssertionError(f"woken by {name}")

    def __hash__(self) -> int:
        raise AssertionError("woken by hash")

    def __eq__(self, other: object) -> bool:
        raise AssertionError("woken by ==")

    def __bool__(self) -> bool:
        raise AssertionError("woken by bool")


LAZY = Wakes()


class HoldsLazy:
    settings = LAZY
    timer = time.time


def takes_lazy(settings: Wakes = LAZY, now: Any = time.time) -> float:
    return float(now())


class Refuses(type):
    def __setattr__(cls, name: str, value: Any) -> None:
        raise AttributeError(f"{name} is read-only")


class Frozen(metaclass=Refuses):
    timer = time.time


def test_lazy_objects_are_not_woken_and_their_neighbours_are_swapped() -> None:
    with patched():
        assert vars(HoldsLazy)["timer"] is time.time
        assert takes_lazy.__defaults__ is not None
        assert takes_lazy.__defaults__[0] is LAZY
        assert takes_lazy.__defaults__[1] is time.time
        assert vars(HoldsLazy)["settings"] is LAZY


def test_a_class_that_refuses_the_swap_keeps_its_clock() -> None:
    original = vars(Frozen)["timer"]
    with patched():
        assert vars(Frozen)["timer"] is original
    assert vars(Frozen)["timer"] is original


def test_a_swap_puts_back_the_very_objects_it_replaced() -> None:
    def original() -> None: ...

    def stand_in() -> None: ...

    def defaults(now: Any = original, *, then: Any = original) -> None: ...

    holder = ModuleType("holder")
    holder.clock = original  # type: ignore[attr-defined]
    positional, keyword = defaults.__defaults__, defaults.__kwdefaults__
    restores = swap(
        [Attribute(holder, "clock"), Defaults(cast(FunctionType, defaults))],
        Table([(original, stand_in)]),
    )
    assert holder.clock is stand_in
    assert defaults.__defaults__ == (stand_in,)
    assert defaults.__kwdefaults__ == {"then": stand_in}
    for restore in reversed(restores):
        restore()
    assert holder.clock is original
    assert defaults.__defaults__ is positional
    assert defaults.__kwdefaults__ is keyword


def test_a_module_is_searched_again_once_its_namespace_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def original() -> None: ...

    def stand_in() -> None: ...

    module = ModuleType("changing")
    monkeypatch.setitem(sys.modules, "changing", module)
    finder = Finder(Table([(original, stand_in)]))
    assert finder.spots([module]) == []
    module.clock = original  # type: ignore[attr-defined]
    assert finder.spots([module]) == [Attribute(module, "clock")]
    assert finder.spots([module]) == [Attribute(module, "clock")]  # remembered
