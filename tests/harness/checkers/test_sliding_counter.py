from ratelimit_harness.harness.checkers import check
from ratelimit_harness.limiters import Policy
from tests.harness.checkers.factory import op, points

POLICY = Policy.parse("sliding-counter:limit=4,window=10")


def test_its_own_guarantee_is_the_aligned_window() -> None:
    assert check(points(6, 7, 8, 9, 10, 11, 12, 13), POLICY).valid  # 8 in 10 s, aligned: fine
    assert not check(points(1, 2, 3, 4, 5), POLICY).valid


def test_a_rejection_is_judged_by_the_weighted_estimate() -> None:
    previous = points(1, 2, 3, 4)
    assert check([*previous, *points(11), op(11.5, 11.6, "rejected")], POLICY).valid  # 1 + 3.4
    verdict = check([*previous, op(15, 15.1, "rejected")], POLICY)  # 0 + 4 x 0.5 = 2 < 4
    assert [v.kind for v in verdict.violations] == ["wrongful-rejection"]


def test_reports_how_often_an_exact_sliding_log_would_disagree() -> None:
    history = [*points(6, 7, 8, 9), *points(11, 12, 13, 14)]  # a log would refuse 11..14
    accuracy = check(history, POLICY).metrics["sliding_accuracy"]
    assert accuracy == {
        "decisions": 8,
        "wrongly_allowed": 4,
        "wrongly_rejected": 0,
        "disagreement_rate": 0.5,
    }
