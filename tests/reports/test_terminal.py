"""The terminal's rendering of a report: the same table as every other format, in 100 columns."""

from pathlib import Path

from ratelimit_harness.reports import read, report
from ratelimit_harness.reports.terminal import WIDTH, render, table


def test_the_race_test_table_fits_and_shows_what_the_summary_shows(race_test_dir: Path) -> None:
    shown = report(read(race_test_dir))
    text = render(shown)
    assert max(map(len, text.splitlines())) <= WIDTH
    assert " ".join(text.split("\n\n")[0].split()) == shown.headline
    headers = ["limiter", "flaw", "result", "needs", "schedules", "seconds", "steps"]
    assert headers in [line.split() for line in text.splitlines()]
    assert "naive-get-set     wrongful-rejection  caught  none   42" in text
    assert "fixed-window-lua  none                clean   -      302" in text
    assert "judged by\nsliding-window:limit=1,window=10." in text  # the footer, wrapped


def test_a_wide_column_wraps_at_spaces_and_never_breaks_a_word() -> None:
    rows = [["fixed-window-incr-expire", "over-admission", "clock skew (0.001 s apart) " * 3]]
    text = table(["limiter", "flaw", "needs"], rows, width=60)
    lines = text.splitlines()
    assert max(map(len, lines)) <= 60
    assert lines[2].startswith("fixed-window-incr-expire  over-admission  clock skew")
    assert len(lines) > 3  # the needs cell went on to lines of its own
    assert all(line[:40].strip() == "" for line in lines[3:])  # under its own column
    words = " ".join(line[42:] for line in lines[2:]).split()
    assert words == ("clock skew (0.001 s apart) " * 3).split()


def test_a_table_of_long_words_stays_whole_rather_than_break_them() -> None:
    text = table(["a", "b"], [["x" * 70, "y" * 40]], width=100)
    assert text.splitlines()[2] == "x" * 70 + "  " + "y" * 40
