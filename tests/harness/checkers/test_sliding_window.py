from ratelimit_harness.harness.checkers import check
from ratelimit_harness.limiters import Policy
from tests.harness.checkers.factory import op, points

POLICY = Policy.parse("sliding-window:limit=2,window=10")


def test_limit_in_every_window_length_is_valid() -> None:
    assert check(points(0, 5, 10, 15, 20), POLICY).valid


def test_limit_plus_one_within_a_window_length_is_caught() -> None:
    verdict = check(points(0, 5, 9.99), POLICY)
    (violation,) = verdict.violations
    assert (violation.kind, violation.count) == ("over-admission", 1)
    assert violation.witnesses[0].span == (0, 9.99)


def test_an_admission_that_may_have_been_a_little_later_is_excused() -> None:
    assert check([*points(0, 5), op(9.9, 10.1)], POLICY).valid


def test_order_matters_and_the_search_finds_the_one_that_works() -> None:
    """One per second: a long admission must go after the short one at its left end, and its
    twin at the right end must go before the short one there. Neither greedy sweep finds it."""
    policy = Policy.parse("sliding-window:limit=1,window=1")
    history = [
        op(0, 10),
        op(0.5),
        *points(11, 12.5, 14, 15.5, 17, 18.5),
        op(20, 30),
        op(29.5),
    ]
    verdict = check(history, policy)
    assert verdict.valid
    assert not verdict.inconclusive


def test_no_order_works_when_the_long_admission_has_no_gap_to_go_to() -> None:
    policy = Policy.parse("sliding-window:limit=1,window=1")
    history = [op(0, 3), op(0, 0.3), op(1.5), op(2.5)]
    verdict = check(history, policy)
    assert not verdict.valid
    assert verdict.violations[0].count >= 1


def test_unknown_outcomes_get_the_benefit_of_the_doubt_both_ways() -> None:
    assert check([*points(0, 5), op(6, None, "unknown")], POLICY).valid
    assert check([*points(0), op(1, None, "unknown"), op(5, 5.1, "rejected")], POLICY).valid


def test_a_rejection_with_room_in_the_window_before_it_is_wrongful() -> None:
    verdict = check([*points(0, 5), op(10.5, 10.6, "rejected")], POLICY)
    assert [v.kind for v in verdict.violations] == ["wrongful-rejection"]
    assert check([*points(0, 5), op(9.5, 9.6, "rejected")], POLICY).valid


def test_admissions_a_window_less_a_millisecond_apart_may_count_apart() -> None:
    policy = Policy.parse("sliding-window:limit=1,window=10")
    assert check(points(0, 10), policy).valid
    assert check(points(0, 9.9995), policy).valid
    assert not check(points(0, 9.998), policy).valid


def test_a_rejection_exactly_one_window_after_an_admission_is_rightful() -> None:
    """As `limits`' moving window refuses: its window includes the instant one window back."""
    policy = Policy.parse("sliding-window:limit=1,window=10")
    assert check([*points(5), op(15, 15, "rejected")], policy).valid
    assert check([*points(5), op(15.0009, 15.0009, "rejected")], policy).valid
    verdict = check([*points(5), op(15.002, 15.002, "rejected")], policy)
    assert [v.kind for v in verdict.violations] == ["wrongful-rejection"]
