from ratelimit_harness.reports.policy import Allowance, allowance, parse


def test_a_policys_words_are_left_out_of_its_numbers() -> None:
    spec = "fixed-window:limit=5,window=2,anchor=first"
    assert parse(spec) == ("fixed-window", {"limit": 5.0, "window": 2.0})


def test_windows_started_by_admissions_have_no_allowance_line_aligned_ones_do() -> None:
    assert allowance("fixed-window:limit=5,window=2,anchor=first") is None
    assert allowance("fixed-window:limit=5,window=2") == Allowance(2.0, 5.0, aligned=True)


def test_a_composite_is_drawn_against_its_first_limit() -> None:
    spec = "fixed-window:limit=10,window=1 + fixed-window:limit=1000,window=3600"
    assert allowance(spec) == Allowance(1.0, 10.0, aligned=True)
