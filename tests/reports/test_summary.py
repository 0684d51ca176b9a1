from pathlib import Path

from ratelimit_harness.reports import build


def test_race_test_summary_has_every_row(race_test_dir: Path, tmp_path: Path) -> None:
    build(race_test_dir, tmp_path)
    summary = (tmp_path / "summary.md").read_text()
    assert "every verdict matches the catalogue" in summary
    assert "| naive-get-set | over-admission | ✅ caught | none | 3 | 0.1 | 8 |" in summary
    assert "| naive-get-set | wrongful-rejection | ✅ caught | none | 42 | 1.1 | 9 |" in summary
    assert "| fixed-window-lua | none | ✅ clean | - | 302 | 5.7 | - |" in summary
    assert "| boundary attack | over-admission | ✅ caught | none | 48 | 1.8 | 8 |" in summary
    assert "judged by sliding-window:limit=1,window=10." in summary  # the footer says how
    assert "  8. app-0  t=1800000000.000  check(user:1) -> allowed" in summary


def test_race_summary_has_the_trace(race_dir: Path, tmp_path: Path) -> None:
    build(race_dir, tmp_path)
    summary = (tmp_path / "summary.md").read_text()
    assert "| token-bucket-client-clock | token-bucket:capacity=1,rate=0.1 |" in summary
    assert "clock jumps +0.001 s (now +0.001 s off)" in summary


def test_load_summary_has_the_rule_and_numbers(load_dir: Path, tmp_path: Path) -> None:
    build(load_dir, tmp_path)
    summary = (tmp_path / "summary.md").read_text()
    assert "4,400 requests in 7.7 s" in summary
    assert (
        "| api | fixed-window-lua | 4400 | 2211 | 2189 | 0 | over-admission 121 (clients: 88) "
        "| 0 | 46.53 |"
    ) in summary
    assert (
        "api (/api/*): fixed-window-lua with fixed-window:limit=10,window=1, judged by "
        "sliding-window:limit=10,window=1; latency ms p50 16.75, p90 30.21, p99.9 88.13, "
        "max 106.05."
    ) in summary
