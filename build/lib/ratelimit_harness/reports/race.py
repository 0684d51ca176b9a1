"""A race's run directory (``runs/race-NAME-TIME/``: ``race.json`` and a saved race per flaw
found, the first ``trace.json``) and a race-test one (``race-test.json`` and a saved race per
flaw found), read back in the runs' own schema (``harness.history.races``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ratelimit_harness.harness.history import races
from ratelimit_harness.harness.history.races import (
    RACE,
    TRACE,
    RaceSummary,
    RaceTestRow,
    SavedRace,
    Search,
)


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


@dataclass(frozen=True)
class RaceRun:
    """A race's run directory: its summary, and the saved race of each flaw it holds."""

    directory: Path
    summary: RaceSummary
    races: list[Race | None]  # each flaw's saved race, in order (None: not found where saved)


def read_race_run(directory: Path) -> RaceRun:
    """The race run in ``directory`` (its ``race.json``); ValueError, in one line, when it is
    not one. Each flaw's saved race is read from the directory (which may have moved since),
    else from where the race saved it (``race --trace``), if it is still there."""
    try:
        summary = RaceSummary.read(directory / RACE)
    except OSError as error:
        raise ValueError(f"{directory}: not a race run ({error.strerror or error})") from None
    paths = [_found(directory, Path(flaw.trace)) for flaw in summary.flaws]
    return RaceRun(directory, summary, [read_race(p) if p.exists() else None for p in paths])


def _found(directory: Path, saved: Path) -> Path:
    inside = directory / saved.name
    return inside if inside.exists() else saved


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
