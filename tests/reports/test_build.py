import json
import re
from pathlib import Path

import pytest

from ratelimit_harness.harness.rundir import rejudge
from ratelimit_harness.reports import build, build_instances
from ratelimit_harness.reports.tables import GLOSSARY

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    "source", ["race_test_dir", "race_run_dir", "race_dir", "race_file", "load_dir"]
)
def test_every_output_exists(source: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    out = tmp_path / "out"
    written = build(request.getfixturevalue(source), out)
    names = {p.name for p in written}
    assert {"summary.md", "junit.xml", "report.html"} <= names
    plots = [p for p in written if p.suffix == ".png"]
    assert plots
    for path in written:
        assert path.parent == out
        assert path.stat().st_size > 0
    for plot in plots:
        assert plot.read_bytes().startswith(PNG)
    # each page ends with where its words are defined
    assert (out / "summary.md").read_text().splitlines()[-1] == f"<sub>{GLOSSARY}</sub>"
    assert "docs/concepts.md" in (out / "report.html").read_text().split("<footer>")[1]


def test_race_test_plots_every_trace(race_test_dir: Path, tmp_path: Path) -> None:
    written = build(race_test_dir, tmp_path)
    assert sorted(p.name for p in written if p.suffix == ".png") == [
        "race-fixed-window-lua-over-admission.png",
        "race-naive-get-set-over-admission.png",
        "race-naive-get-set-wrongful-rejection.png",
    ]


def test_load_plots_admissions_and_latency(load_dir: Path, tmp_path: Path) -> None:
    names = {p.name for p in build(load_dir, tmp_path)}
    assert {"admissions-api.png", "latency.png"} <= names


@pytest.mark.parametrize("source", ["race_test_dir", "race_file", "load_dir"])
def test_html_is_self_contained(
    source: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    written = build(request.getfixturevalue(source), tmp_path)
    page = (tmp_path / "report.html").read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", page, re.IGNORECASE)
    assert "http://" not in page
    assert "https://" not in page
    assert "<script" not in page
    images = re.findall(r'<img [^>]*src="([^"]*)"', page)
    assert len(images) == len([p for p in written if p.suffix == ".png"])
    assert all(src.startswith("data:image/png;base64,") for src in images)


def test_html_shows_the_table_and_the_evidence(race_test_dir: Path, tmp_path: Path) -> None:
    build(race_test_dir, tmp_path)
    page = (tmp_path / "report.html").read_text()
    assert "<table>" in page
    assert "<td>boundary attack</td>" in page
    assert "SET ratelimit:{user:1}:naive-get-set:limit=1,window=10 1 PX 10000 -&gt; OK" in page


def test_instances_plot(load_dir: Path, tmp_path: Path) -> None:
    (written,) = build_instances([load_dir, load_dir], tmp_path)
    assert written.name == "instances.png"
    assert written.read_bytes().startswith(PNG)


def test_an_unfinished_load_run_is_refused_in_one_line(load_dir: Path, tmp_path: Path) -> None:
    (load_dir / "verdict.json").unlink()
    with pytest.raises(ValueError, match=r"no verdict\.json"):
        build(load_dir, tmp_path)


def test_a_directory_without_a_run_is_refused(tmp_path: Path) -> None:
    (tmp_path / "notes.json").write_text("{}")
    with pytest.raises(ValueError, match=r"not a run directory \(no manifest\.json\)"):
        build(tmp_path, tmp_path / "out")


def test_a_saved_race_of_another_shape_is_refused_in_one_line(race_file: Path) -> None:
    race_file.write_text('{"limiter": "x", "trace": ["  1. app-0 t=0.000  check(a)"]}')
    with pytest.raises(ValueError, match=r"trace\.json: not a saved race \(KeyError\('policy'\)\)"):
        build(race_file, race_file.parent / "out")


@pytest.mark.parametrize(
    "source", ["race_test_dir", "race_run_dir", "race_dir"]
)  # (load_dir's is trimmed)
def test_each_run_directory_read_here_is_judged_again_as_it_was_recorded(
    source: str, request: pytest.FixtureRequest
) -> None:
    again = rejudge(request.getfixturevalue(source))
    assert again
    assert all(r.same for r in again), [r.name for r in again if not r.same]


def test_a_serve_run_is_reported_as_a_load_run(load_dir: Path, tmp_path: Path) -> None:
    manifest = load_dir / "manifest.json"
    manifest.write_text(manifest.read_text().replace('"load"', '"serve"'))
    names = {p.name for p in build(load_dir, tmp_path)}
    assert {"summary.md", "report.html", "admissions-api.png"} <= names


def test_a_race_run_plots_the_trace_of_each_flaw_it_holds(
    race_run_dir: Path, tmp_path: Path
) -> None:
    written = build(race_run_dir, tmp_path)
    assert sorted(p.name for p in written if p.suffix == ".png") == [
        "race-naive-get-set-20261204-195359.png",
        "race-trace-wrongful-rejection.png",
    ]


def test_a_flaw_saved_outside_the_run_directory_is_read_from_where_it_was_saved(
    race_run_dir: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "kept" / "my-trace.json"
    elsewhere.parent.mkdir()
    (race_run_dir / "trace.json").rename(elsewhere)
    summary = json.loads((race_run_dir / "race.json").read_text())
    summary["flaws"][0]["trace"] = str(elsewhere)
    (race_run_dir / "race.json").write_text(json.dumps(summary))
    written = build(race_run_dir, tmp_path / "out")
    assert "race-my-trace.png" in {p.name for p in written}
    elsewhere.unlink()  # gone: the report says what the summary holds, without its trace
    written = build(race_run_dir, tmp_path / "out2")
    assert "race-my-trace.png" not in {p.name for p in written}
    summary = (tmp_path / "out2" / "summary.md").read_text()
    assert "| over-admission | ✅ caught | bounded | none | 5 |" in summary
    # each flaw keeps its own evidence: the one whose trace is gone says so
    junit = (tmp_path / "out2" / "junit.xml").read_text()
    assert f"its saved race is no longer at {elsewhere}" in junit
    assert "time passes" in junit.split("wrongful-rejection]")[1]  # the second's trace


def test_a_clean_race_run_is_reported_with_its_coverage(
    clean_race_dir: Path, tmp_path: Path
) -> None:
    written = build(clean_race_dir, tmp_path)
    assert {p.name for p in written} == {"summary.md", "junit.xml", "report.html"}
    summary = (tmp_path / "summary.md").read_text()
    assert "no violation in 40 schedules" in summary
    assert "| none | ✅ clean | - | - | 40 | 2.0 | - |" in summary
    assert "Explored 2 instances x 2 requests on one identity" in summary
    assert "then 20 random schedules (seed 1)" in summary
    junit = (tmp_path / "junit.xml").read_text()
    assert 'name="gcra-lua[clean]"' in junit
    assert "<failure" not in junit


def test_a_race_not_judged_is_not_called_clean(clean_race_dir: Path, tmp_path: Path) -> None:
    path = clean_race_dir / "race.json"
    summary = json.loads(path.read_text())
    path.write_text(json.dumps({**summary, "unscheduled": 12, "first_unscheduled": ["TIME"]}))
    build(clean_race_dir, tmp_path)
    shown = (tmp_path / "summary.md").read_text()
    assert "not judged in 40 schedules" in shown
    assert "| none | not judged |" in shown
    assert "Not judged: Redis ran commands for clients the explorer cannot see." in shown
    assert "<skipped" in (tmp_path / "junit.xml").read_text()
