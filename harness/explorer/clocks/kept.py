"""Where code keeps a clock, and swapping it there: a module's global (``from time import
time``, ``now = time.time``), a class attribute (``timer = time.time`` or ``timer =
staticmethod(time.time)``, read through any subclass), a function's or method's default
argument (``def check(key, now=time.time)``).

A ``Table`` maps each original to what stands in for it, by identity: finding spots never hashes,
compares or calls the objects it meets, so a lazy object (a settings proxy) is not woken.
``Finder`` remembers what it found: a module is searched again only once its namespace holds
other objects than at its last search (a name rebound, a module reloaded), a class's own
namespace only once.

Not reachable: a clock bound to an instance (``self.clock = time.time``), inside a closure, a
``functools.partial`` or a container (a tuple, a dict: where the harness keeps real time for
itself), or set on a class of an already searched module after its search.
"""

from __future__ import annotations

import operator
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from types import FunctionType, ModuleType
from typing import Any

Restore = Callable[[], None]
_IMMUTABLE = 1 << 8  # Py_TPFLAGS_IMMUTABLETYPE: a builtin or extension class


class Table:
    """Originals and what stands in for each, looked up by identity."""

    def __init__(self, pairs: Iterable[tuple[Any, Any]]) -> None:
        self._pairs = {id(original): (original, stand_in) for original, stand_in in pairs}

    def get(self, value: Any) -> Any:
        """What stands in for ``value``, or None if it is none of the originals."""
        pair = self._pairs.get(id(value))
        return pair[1] if pair is not None and pair[0] is value else None

    def instead(self, value: Any) -> Any:
        """What stands in for ``value``, or ``value`` itself."""
        stand_in = self.get(value)
        return value if stand_in is None else stand_in

    def reversed(self) -> Table:
        return Table((stand_in, original) for original, stand_in in self._pairs.values())


@dataclass(frozen=True)
class Attribute:
    """A name in a module's or a class's own namespace."""

    holder: Any
    name: str

    def swap(self, table: Table) -> Restore | None:
        value = vars(self.holder).get(self.name)
        stand_in = table.get(value)
        return None if stand_in is None else _put(self.holder, self.name, stand_in, value)


@dataclass(frozen=True)
class Static:
    """A static method in a class's namespace that is itself a clock (``staticmethod(time.time)``,
    the way to keep a Python function as a class attribute unbound)."""

    cls: type
    name: str

    def swap(self, table: Table) -> Restore | None:
        wrapper = vars(self.cls).get(self.name)
        if type(wrapper) is not staticmethod:
            return None
        stand_in = table.get(wrapper.__func__)
        if stand_in is None:
            return None
        return _put(self.cls, self.name, staticmethod(stand_in), wrapper)


def _put(holder: Any, name: str, new: Any, old: Any) -> Restore | None:
    try:
        setattr(holder, name, new)
    except (TypeError, AttributeError):  # a class that refuses it: leave it be
        return None
    return lambda: setattr(holder, name, old)


@dataclass(frozen=True)
class Defaults:
    """A function's default arguments, positional and keyword-only."""

    function: FunctionType

    def swap(self, table: Table) -> Restore | None:
        function = self.function
        positional, keyword = function.__defaults__, function.__kwdefaults__
        new_positional = positional and tuple(map(table.instead, positional))
        new_keyword = keyword and {k: table.instead(v) for k, v in keyword.items()}
        old_values = (*(positional or ()), *(keyword or {}).values())
        new_values = (*(new_positional or ()), *(new_keyword or {}).values())
        if all(new is old for new, old in zip(new_values, old_values, strict=True)):
            return None
        function.__defaults__, function.__kwdefaults__ = new_positional, new_keyword

        def restore() -> None:
            function.__defaults__, function.__kwdefaults__ = positional, keyword

        return restore


Spot = Attribute | Static | Defaults


def swap(spots: Iterable[Spot], table: Table) -> list[Restore]:
    """Put the stand-ins in every spot that holds an original; what puts each back."""
    return [restore for spot in spots if (restore := spot.swap(table)) is not None]


def modules() -> list[ModuleType]:
    """The imported modules, as they are now."""
    return [m for m in list(sys.modules.values()) if issubclass(type(m), ModuleType)]


@dataclass(frozen=True)
class _Searched:
    """What one class's own namespace holds: its spots, and the classes nested in it."""

    cls: type
    spots: list[Spot]
    nested: list[type]


@dataclass(frozen=True)
class _Module:
    """A module's spots, as long as its namespace holds the same objects (``values``)."""

    module: ModuleType
    values: tuple[Any, ...]
    spots: list[Spot]

    def holds(self, values: tuple[Any, ...]) -> bool:
        return len(values) == len(self.values) and all(map(operator.is_, values, self.values))


class Finder:
    """Every spot in some modules that holds an original or a stand-in of its tables: their
    globals, the classes they name (and those classes' bases and nested classes), the functions
    and methods with defaults."""

    def __init__(self, *tables: Table) -> None:
        self._tables = tables
        self._modules: dict[int, _Module] = {}  # by the module's id
        self._classes: dict[int, _Searched] = {}  # by the class's id

    def spots(self, where: Iterable[ModuleType]) -> list[Spot]:
        spots: list[Spot] = []
        for module in where:
            values = tuple(vars(module).values())
            known = self._modules.get(id(module))
            if known is None or known.module is not module or not known.holds(values):
                known = _Module(module, values, list(self._search(module, set())))
                self._modules[id(module)] = known
            spots += known.spots
        return spots

    def _search(self, module: ModuleType, seen: set[int]) -> Iterator[Spot]:
        for name, value in list(vars(module).items()):
            if self._holds(value):
                if not name.startswith("__"):
                    yield Attribute(module, name)
            else:
                yield from self._in(value, seen)

    def _holds(self, value: Any) -> bool:
        return any(table.get(value) is not None for table in self._tables)

    def _in(self, value: Any, seen: set[int]) -> Iterator[Spot]:
        kind = type(value)
        if kind in (staticmethod, classmethod):
            value, kind = value.__func__, type(value.__func__)
        if kind is FunctionType:
            if self._defaults_hold(value):
                yield Defaults(value)
        elif issubclass(kind, type):
            for cls in value.__mro__:
                if id(cls) in seen or cls.__flags__ & _IMMUTABLE:
                    continue
                seen.add(id(cls))
                searched = self._searched(cls)
                yield from searched.spots
                for nested in searched.nested:
                    yield from self._in(nested, seen)

    def _defaults_hold(self, function: FunctionType) -> bool:
        keyword = function.__kwdefaults__ or {}
        return any(map(self._holds, (*(function.__defaults__ or ()), *keyword.values())))

    def _searched(self, cls: type) -> _Searched:
        known = self._classes.get(id(cls))
        if known is None or known.cls is not cls:
            known = _Searched(cls, [], [])
            for name, attribute in list(vars(cls).items()):
                if self._holds(attribute):
                    known.spots.append(Attribute(cls, name))
                elif type(attribute) is staticmethod and self._holds(attribute.__func__):
                    known.spots.append(Static(cls, name))
                elif issubclass(type(attribute), type):
                    known.nested.append(attribute)
                else:
                    known.spots.extend(self._in(attribute, set()))
            self._classes[id(cls)] = known
        return known
