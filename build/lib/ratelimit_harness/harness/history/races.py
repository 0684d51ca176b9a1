"""A race as its run directory holds it: the trace of a schedule (``Step``), a saved race
(``SavedRace``, one file: ``trace.json`` of a race, one file per flaw of a race-test), a race's
summary (``RaceSummary``: ``race.json`` in a race's run directory, and what ``race --json``
writes) and the race-test table (``RaceTestRow``
in ``race-test.json``). Written by the explorer, read back by ``replay``, ``check RUN_DIR`` and
the reports: one schema, both ways, the standard library only.

A saved race:

    {"limiter": "naive-get-set", "policy": "fixed-window:limit=1,window=10",
     "judged_by": "fixed-window:limit=1,window=10", "instances": 2,
     "violations": ["over-admission"],
     "actions": [{"action": "step", "instance": 0, "identity": "user:1"}, ...],
     "steps": [{"lane": "app-0", "kind": "request", "clock": 1800000000.0,
                "at": 1800000000.0, "what": "check(user:1)"}, ...],
     "verdict": {...}}

``actions`` are the explorer's, opaque here (``harness.explorer.actions`` reads them); a step's
fields other than ``lane``, ``kind``, ``clock``, ``at`` and ``what`` are written only when set.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar

from ratelimit_harness.harness.history.files import write_json
from ratelimit_harness.harness.history.verdict import Verdict

RACE_TEST = "race-test.json"  # the race-test table, in its run directory
TRACE = "trace.json"  # a race's first saved race, in its run directory
RACE = "race.json"  # a race's summary, in its run directory

# what a trace step is: a request starting, its decision or failure, a command the instance
# sent (or a thread of its own did, unscheduled), time passing, a fault striking
REQUEST, DECISION, FAILED, COMMAND = "request", "decision", "failed", "command"
UNSCHEDULED, TIME, CRASH, SKEW, NEVER_SENT = "unscheduled", "time", "crash", "skew", "never-sent"
STEP_KINDS = (REQUEST, DECISION, FAILED, COMMAND, UNSCHEDULED, TIME, CRASH, SKEW, NEVER_SENT)
NOBODY = "-"  # the lane of what happens to every instance at once: time passing


@dataclass(frozen=True)
class Step:
    """One step of a trace, in the order the server saw them.

    ``lane`` is the instance (or thread) it happened on, ``NOBODY`` for time passing; ``clock``
    is that instance's clock then (skew included) and ``at`` the run's one virtual time.
    ``what`` and ``reply`` are as a person reads them (a command and Redis' reply; a request's
    outcome or error); ``identity`` is the request's, ``keys`` those a command touched,
    ``seconds`` how far time passed or a clock jumped, ``offset`` how far off that clock is now.
    """

    lane: str
    kind: str
    clock: float
    at: float
    what: str
    reply: str = ""
    identity: str = ""
    keys: tuple[str, ...] = ()
    seconds: float = 0.0
    offset: float = 0.0

    def show(self, number: int) -> str:
        """The step as a numbered line of the trace a person reads."""
        reply = f" -> {self.reply}" if self.reply else ""
        return f"{number:>3}. {self.lane:<6} t={self.clock:.3f}  {self.what}{reply}"

    def to_json(self) -> dict[str, Any]:
        unset = {f.name: f.default for f in fields(self) if f.name not in _ALWAYS}
        return {
            k: list(v) if isinstance(v, tuple) else v
            for k, v in asdict(self).items()
            if k not in unset or v != unset[k]
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Step:
        if data["kind"] not in STEP_KINDS:
            raise ValueError(f"unknown step kind {data['kind']!r}")
        return cls(
            lane=str(data["lane"]),
            kind=str(data["kind"]),
            clock=float(data["clock"]),
            at=float(data["at"]),
            what=str(data["what"]),
            reply=str(data.get("reply", "")),
            identity=str(data.get("identity", "")),
            keys=tuple(str(k) for k in data.get("keys", ())),
            seconds=float(data.get("seconds", 0.0)),
            offset=float(data.get("offset", 0.0)),
        )


_ALWAYS = ("lane", "kind", "clock", "at", "what")


def shown(steps: list[Step]) -> list[str]:
    """A trace as the numbered lines a person reads."""
    return [step.show(number) for number, step in enumerate(steps, 1)]


@dataclass(frozen=True)
class SavedRace:
    """One schedule that was run and judged: enough to read it, and to replay it."""

    limiter: str
    policy: str
    judged_by: str
    instances: int
    violations: list[str]
    actions: list[dict[str, Any]]
    steps: list[Step]
    verdict: Verdict
    give_backs: tuple[bool, ...] = (False,)  # which admitted requests were given back

    def to_json(self) -> dict[str, Any]:
        given_back = {"give_backs": list(self.give_backs)} if any(self.give_backs) else {}
        return {
            "limiter": self.limiter,
            "policy": self.policy,
            "judged_by": self.judged_by,
            "instances": self.instances,
            **given_back,
            "violations": self.violations,
            "actions": self.actions,
            "steps": [step.to_json() for step in self.steps],
            "verdict": self.verdict.to_json(),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SavedRace:
        return cls(
            limiter=str(data["limiter"]),
            policy=str(data["policy"]),
            judged_by=str(data["judged_by"]),
            instances=int(data["instances"]),
            violations=[str(v) for v in data["violations"]],
            actions=[dict(a) for a in data["actions"]],
            steps=[Step.from_json(s) for s in data["steps"]],
            verdict=Verdict.from_json(data["verdict"]),
            give_backs=tuple(bool(b) for b in data.get("give_backs", [False])) or (False,),
        )

    def write(self, path: str | os.PathLike[str]) -> None:
        write_json(Path(path), self.to_json())

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> SavedRace:
        """The race saved at ``path``; OSError, or ValueError saying why it is not one."""
        return _read(path, "a saved race", cls.from_json)


Record = TypeVar("Record")


def _read(
    path: str | os.PathLike[str], what: str, parse: Callable[[dict[str, Any]], Record]
) -> Record:
    """The record of JSON file ``path``; OSError, or ValueError saying why it is not ``what``."""
    try:
        return parse(json.loads(Path(path).read_text(encoding="utf-8")))
    except (KeyError, TypeError, AttributeError) as error:
        raise ValueError(f"{path}: not {what} ({error!r})") from None
    except ValueError as error:
        raise ValueError(f"{path}: not {what} ({error})") from None


@dataclass(frozen=True)
class RaceFlaw:
    """One flaw a race found: its kinds, the faults it needs and its saved race."""

    kinds: list[str]
    faults: list[str]  # the nemesis' faults its shortest schedule needs
    needs: list[str]  # those faults as a report shows them ("none", "skew 0.001 s", ...)
    clocks_apart: float | None  # how far apart the clocks were, when it needs skew
    trace: str  # its saved race's path
    steps: int  # of its trace
    actions: int  # of its schedule, after shrinking
    found_by: str  # the stage that found it (see explorer.explore)
    schedules: int  # run by its search until it was found
    seconds_to_find: float

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "seconds_to_find": round(self.seconds_to_find, 3)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RaceFlaw:
        return cls(**{f.name: data[f.name] for f in fields(cls)})


@dataclass(frozen=True)
class RaceSummary:
    """What one race did and found (``race --json``), over the searches it ran (see
    explorer.explore).

    The counts and ``seconds`` add up every search. The fields from ``examples_to_find`` to
    ``seconds_to_find``, ``trace_steps`` and ``search_ended`` are the first search's. Seconds
    are kept as measured and written rounded to the millisecond.
    """

    limiter: str
    policy: str
    nemesis: list[str]  # the faults a schedule could draw
    max_skew: float | None
    found: list[str]  # the kinds of violation, over every flaw
    flaws: list[RaceFlaw]
    examples: int
    examples_to_find: int
    found_by: str | None  # the stage that found the first flaw
    coverage: dict[str, Any] | None  # what the bounded stage explored (explorer.bounded)
    covered: str  # the same, and what was only sampled, in words
    seconds_to_find: float
    seconds: float
    trace_steps: int
    trace: str | None  # the first flaw's saved race
    decisions: int
    errors: int  # checks that raised or answered what is not a decision
    first_error: str | None
    void: int  # schedules not judged: real time reached them
    unconfirmed: list[dict[str, list[str]]]  # the first few: {"found": kinds, "trace": lines}
    unconfirmed_count: int  # finds that did not show again when re-run (not counted)
    search_ended: str | None  # why Hypothesis ended the search early
    # commands Redis ran for clients the explorer cannot see (None: not counted on this Redis)
    unscheduled: int | None
    first_unscheduled: list[str]
    allow_unscheduled: bool
    off_clock: int  # decisions whose time was off the schedule's (see explorer.real_clock)
    first_off_clock: str | None
    allow_real_clock: bool

    @property
    def unscheduled_refused(self) -> bool:
        """Not judged: commands went unscheduled, and judging without them was not allowed."""
        return bool(self.unscheduled) and not self.allow_unscheduled

    @property
    def off_clock_refused(self) -> bool:
        """Not judged: decisions read a real clock, and judging without them was not allowed."""
        return self.off_clock > 0 and not self.allow_real_clock

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["flaws"] = [flaw.to_json() for flaw in self.flaws]
        data["seconds_to_find"] = round(self.seconds_to_find, 3)
        data["seconds"] = round(self.seconds, 3)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RaceSummary:
        names = {f.name for f in fields(cls)} - {"flaws"}
        flaws = [RaceFlaw.from_json(flaw) for flaw in data["flaws"]]
        return cls(flaws=flaws, **{name: data[name] for name in names})

    def write(self, path: str | os.PathLike[str]) -> None:
        write_json(Path(path), self.to_json())

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> RaceSummary:
        """The summary at ``path``; OSError, or ValueError saying why it is not one."""
        return _read(path, "a race's summary", cls.from_json)


@dataclass
class Search:
    """One search of a race-test row, that found something: what, how fast, how short."""

    found: list[str]
    found_by: str  # the stage that found it (see explorer.explore)
    needs: list[str]  # the faults it needed, as a report shows them ("none", "crash", ...)
    examples_to_find: int
    seconds_to_find: float
    seconds_with_shrinking: float
    actions_before_shrinking: int
    actions_after_shrinking: int
    trace_steps: int
    trace: str  # the saved race's file name, in the run directory

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Search:
        return cls(**{f.name: data[f.name] for f in fields(cls)})


@dataclass
class RaceTestRow:
    """One limiter of the race-test table: what the catalogue expects, what the search found."""

    name: str  # the row's label: the limiter's name, or what the row shows of it
    limiter: str
    policy: str  # what it was built with
    judged_by: str  # what its histories were judged by
    expected_flaws: list[str]
    found_flaws: list[str] = field(default_factory=list)
    examples: int = 0  # schedules run, over every search of the row
    seconds: float = 0.0
    searches: list[Search] = field(default_factory=list)  # the ones that found something
    stress_seconds: float = 0.0  # how long naive stress ran, for contrast (0: it did not)
    stress_found: list[str] = field(default_factory=list)  # and what it found
    replays_that_failed: list[str] = field(default_factory=list)  # traces that did not reproduce
    unconfirmed: int = 0  # finds that did not show again when re-run (not counted)
    void: int = 0  # schedules not judged: real time reached them
    # commands Redis ran for clients the explorer cannot see (see explorer.unseen): none, for a
    # verdict to stand
    unseen: int = 0
    covered: str = ""  # what the row's last search explored (for a clean row, its proof)

    @property
    def matches(self) -> bool:
        expected = set(self.found_flaws) == set(self.expected_flaws)
        return expected and not self.replays_that_failed and not self.unseen

    def search_for(self, flaw: str) -> Search | None:
        return next((s for s in self.searches if flaw in s.found), None)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "matches": self.matches}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RaceTestRow:
        names = {f.name for f in fields(cls)} - {"searches"}
        row = cls(**{k: v for k, v in data.items() if k in names})
        row.searches = [Search.from_json(s) for s in data["searches"]]
        return row


def write_race_test(directory: Path, rows: list[RaceTestRow]) -> Path:
    path = directory / RACE_TEST
    all_match = all(row.matches for row in rows)
    write_json(path, {"all_match": all_match, "rows": [row.to_json() for row in rows]})
    return path


def read_race_test(directory: Path) -> list[RaceTestRow]:
    """The rows of the race-test table in ``directory``; OSError, or ValueError saying why."""
    path = directory / RACE_TEST
    try:
        return [RaceTestRow.from_json(r) for r in json.loads(path.read_text())["rows"]]
    except (KeyError, TypeError, AttributeError) as error:
        raise ValueError(f"{path}: not a race-test table ({error!r})") from None
