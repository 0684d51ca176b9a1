"""The report builders. A run directory (a race, a race-test, a load run or a study) or a
saved race goes in. Out come ``summary.md``, ``junit.xml``, PNG plots and a self-contained
``report.html``. Each renders one ``tables.Report`` of the run, which ``race_test_report``,
``race_report`` or ``load_report`` builds; the terminal shows it too (``terminal``).

They read only what the run wrote, never a live run. Each output format is one module. The
plots' modules (matplotlib, slow to import) are imported only when a plot is drawn.
``bench_docs`` does the same for ``make bench``'s results: the docs' figure blocks, rendered
from ``bench/results.json``.
"""

from __future__ import annotations

import json
from pathlib import Path

from ratelimit_harness.harness.history.races import RACE
from ratelimit_harness.reports import html, junit, markdown, tables
from ratelimit_harness.reports.load import LoadRun, read_load
from ratelimit_harness.reports.load_report import load_report
from ratelimit_harness.reports.race import (
    Race,
    RaceRun,
    RaceTest,
    read_race,
    read_race_run,
    read_race_test,
)
from ratelimit_harness.reports.race_report import race_report, race_run_report
from ratelimit_harness.reports.race_test_report import race_test_report

__all__ = ["build", "build_instances", "read", "read_load", "read_race", "read_race_test"]

MANIFEST = "manifest.json"  # what a run directory says it holds (see harness.rundir)


Run = RaceTest | RaceRun | Race | LoadRun


def read(source: Path) -> Run:
    """A saved race's file, or a run directory of a race, a race-test or a load run; ValueError,
    in one line, for anything else. A race's directory without a summary (written before races
    kept one) is read as its first saved race."""
    if source.is_file():
        return read_race(source)
    if not source.is_dir():
        raise ValueError(f"{source}: no such run directory or trace file")
    kind = _kind(source)
    if kind == "race":
        return read_race_run(source) if (source / RACE).exists() else read_race(source)
    if kind in ("load", "serve"):  # serve: the same system, under another load generator
        return read_load(source)
    if kind == "race-test":
        return read_race_test(source)
    raise ValueError(f"{source}: a run of kind {kind!r} has no such report")


def report(run: Run) -> tables.Report:
    """The one report every format renders."""
    if isinstance(run, RaceRun):
        return race_run_report(run)
    if isinstance(run, Race):
        return race_report(run)
    if isinstance(run, LoadRun):
        return load_report(run)
    return race_test_report(run)


def build(source: Path, out: Path) -> list[Path]:
    """Write every report of ``source`` (a run directory, or a saved race's file) into ``out``;
    return the files written, the page last."""
    out.mkdir(parents=True, exist_ok=True)
    if source.is_dir() and _kind(source) == "study":
        from ratelimit_harness.reports import study

        return study.build(source, out)
    run = read(source)
    return _write(out, report(run), _plots(run, out))


def build_instances(sources: list[Path], out: Path) -> list[Path]:
    """``instances.png``: violations against the number of instances, over load runs."""
    from ratelimit_harness.reports import instances

    out.mkdir(parents=True, exist_ok=True)
    return [instances.plot([read_load(s) for s in sources], out / "instances.png")]


def _plots(run: Run, out: Path) -> list[Path]:
    if isinstance(run, LoadRun):
        from ratelimit_harness.reports import admissions, latency, latency_time

        plots = [admissions.plot(run, r, out / f"admissions-{r.name}.png") for r in run.rules]
        plots.append(latency.plot(run, out / "latency.png"))
        plots.append(latency_time.plot(run, out / "latency-time.png"))
        return [p for p in plots if p is not None]
    from ratelimit_harness.reports import swimlane

    if isinstance(run, Race):
        races = [run]
    elif isinstance(run, RaceRun):
        races = [race for race in run.races if race is not None]
    else:
        races = list(run.races.values())
    return [swimlane.plot(race, out / race.image) for race in races]


def _write(out: Path, shown: tables.Report, plots: list[Path]) -> list[Path]:
    return [
        markdown.write(out / "summary.md", shown),
        junit.write(out / "junit.xml", shown),
        *plots,
        html.write(out / "report.html", shown, plots),
    ]


def _kind(directory: Path) -> str:
    """The kind of run its manifest names (``harness.rundir``); ValueError without one."""
    path = directory / MANIFEST
    if not path.is_file():
        raise ValueError(f"{directory}: not a run directory (no {MANIFEST})")
    try:
        return str(json.loads(path.read_text())["kind"])
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ValueError(f"{path}: not a run's manifest ({error!r})") from None
