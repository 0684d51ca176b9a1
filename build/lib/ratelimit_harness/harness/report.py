"""A run's report, written from its run directory by the builders in ``reports/`` (imported
only here, when a report is asked for: matplotlib is slow to import)."""

from __future__ import annotations

from pathlib import Path

from ratelimit_harness.harness.errors import BadArgument, writing


def write_report(sources: list[Path], out: Path | None = None) -> list[Path]:
    """Every report of a run directory or a saved race (``summary.md``, ``junit.xml``, the
    plots, ``report.html`` last) into ``out`` (default: the run directory, or the trace's
    own); several load run directories make ``instances.png`` instead."""
    from ratelimit_harness.reports import build, build_instances

    for source in sources:
        if not source.exists():
            raise BadArgument(f"no run at {source}")
    first = sources[0]
    out = out or (first.parent if first.is_file() else first)
    try:
        with writing(out):
            if len(sources) > 1:
                return build_instances(sources, out)
            return build(first, out)
    except ValueError as error:  # the builders' word for a run they cannot read
        raise BadArgument(str(error)) from None


def shown_in_terminal(source: Path) -> str:
    """The report of a run directory as the terminal shows it (``reports.terminal``)."""
    from ratelimit_harness.reports import read, report
    from ratelimit_harness.reports.terminal import render

    try:
        return render(report(read(source)))
    except ValueError as error:
        raise BadArgument(str(error)) from None
