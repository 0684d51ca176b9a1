"""The report builders: a run directory (race-test or load) or a saved race in, ``summary.md``,
``junit.xml``, PNG plots and a self-contained ``report.html`` out. They read only what the run
wrote, never a live run; each output format is one module. ``bench_docs`` does the same for
``make bench``'s results: the docs' figure blocks, rendered from ``bench/results.json``.
"""

from __future__ import annotations

from pathlib import Path

from reports import admissions, html, instances, junit, latency, markdown, study, swimlane, tables
from reports.load import LoadRun, read_load
from reports.race import RaceTest, Trace, read_race_test, read_trace

__all__ = ["build", "build_instances", "read", "read_load", "read_race_test", "read_trace"]


def read(source: Path) -> RaceTest | Trace | LoadRun:
    """A race's trace file, a load run directory (it has ``rules.json``) or a race-test one;
    ValueError, in one line, for anything else."""
    if source.is_file():
        return read_trace(source)
    if not source.is_dir():
        raise ValueError(f"{source}: no such run directory or trace file")
    if (source / "rules.json").exists() or (source / "verdict.json").exists():
        return read_load(source)
    return read_race_test(source)


def build(source: Path, out: Path) -> list[Path]:
    """Write every report of ``source`` (a race-test or load run directory, or a race's trace
    file) into ``out``; return the files written, the page last."""
    out.mkdir(parents=True, exist_ok=True)
    if (source / "study.json").is_file():
        return study.build(source, out)
    run = read(source)
    if isinstance(run, Trace):
        return _race(run, out)
    if isinstance(run, LoadRun):
        return _load(run, out)
    return _race_test(run, out)


def build_instances(sources: list[Path], out: Path) -> list[Path]:
    """``instances.png``: violations against the number of instances, over load runs."""
    out.mkdir(parents=True, exist_ok=True)
    return [instances.plot([read_load(s) for s in sources], out / "instances.png")]


def _race_test(run: RaceTest, out: Path) -> list[Path]:
    traces = [t for row in run.rows for t in row.traces]
    report = tables.Report(
        f"Race test: {run.directory.name}",
        tables.race_test_headline(run),
        tables.race_test_table(run),
        tables.race_test_findings(run),
    )
    return _write(
        out,
        report,
        junit.race_test_suites(run),
        [swimlane.plot(t, out / tables.race_image(t)) for t in traces],
    )


def _race(trace: Trace, out: Path) -> list[Path]:
    table = tables.Table(
        ["limiter", "policy", "judged by", "instances", "violations", "trace steps"],
        [
            [
                trace.limiter,
                trace.policy,
                trace.judged_by,
                str(trace.instances),
                ", ".join(trace.violations) or "none",
                str(len(trace.steps)),
            ]
        ],
    )
    report = tables.Report(
        f"Race: {trace.path.stem}",
        tables.race_headline(trace),
        table,
        [tables.trace_finding(trace)],
    )
    return _write(
        out,
        report,
        junit.race_suites(trace),
        [swimlane.plot(trace, out / tables.race_image(trace))],
    )


def _load(run: LoadRun, out: Path) -> list[Path]:
    plots = [admissions.plot(run, rule, out / f"admissions-{rule.name}.png") for rule in run.rules]
    plots.append(latency.plot(run, out / "latency.png"))
    report = tables.Report(
        f"Load: {run.directory.name}",
        tables.load_headline(run),
        tables.load_table(run),
        tables.load_findings(run),
    )
    return _write(
        out,
        report,
        junit.load_suites(run),
        [p for p in plots if p is not None],
    )


def _write(
    out: Path, report: tables.Report, suites: dict[str, list[junit.Case]], plots: list[Path]
) -> list[Path]:
    return [
        markdown.write(out / "summary.md", report),
        junit.write(out / "junit.xml", suites),
        *plots,
        html.write(out / "report.html", report, plots),
    ]
