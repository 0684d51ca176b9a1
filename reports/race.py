"""A race's run directory (``runs/race-NAME-TIME/trace.json``) and a race-test one
(``race-test.json`` and a saved race per flaw found), read back in the runs' own schema
(``harness.history.races``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ratelimit_harness.harness.history import races
from ratelimit_harness.harness.history.races import TRACE, RaceTestRow, SavedRace, Search


@dataclass(frozen=True)
class Race:
    """A saved race and where it was read from."""

    path: Path
    saved: SavedRace

    @property
    def name(self) -> str:
        """Its run directory's name for a race's first, else its file's."""
        return self.path.parent.name if self.path.name == TRACE else self.path.stem

    @property
    def image(self) -> str:
        """The file name of its swim-lane plot."""
        return f"{self.name}.png" if self.name.startswith("race-") else f"race-{self.name}.png"


@dataclass(frozen=True)
class RaceTest:
    directory: Path
    rows: list[RaceTestRow]
    races: dict[str, Race]  # by file name in the directory

    @property
    def all_match(self) -> bool:
        return all(row.matches for row in self.rows)

    def race_of(self, search: Search) -> Race | None:
        return self.races.get(search.trace)


def read_race(path: Path) -> Race:
    """The race saved at ``path`` (a file, or a race's run directory); ValueError, in one line,
    when it is not one."""
    if path.is_dir():
        path = path / TRACE
    try:
        return Race(path, SavedRace.read(path))
    except OSError as error:
        raise ValueError(f"{path}: {error.strerror or error}") from None


def read_race_test(directory: Path) -> RaceTest:
    try:
        rows = races.read_race_test(directory)
    except OSError as error:
        raise ValueError(f"{directory}: not a race-test run ({error.strerror or error})") from None
    names = [s.trace for row in rows for s in row.searches]
    saved = {name: read_race(directory / name) for name in names if (directory / name).exists()}
    return RaceTest(directory, rows, saved)
