import pytest

from harness.checkers import check
from limiters import Policy
from tests.harness.checkers.factory import op, points


@pytest.fixture(params=["token-bucket", "gcra"])
def policy(request: pytest.FixtureRequest) -> Policy:
    return Policy.parse(f"{request.param}:capacity=2,rate=1")


def test_a_burst_of_capacity_then_the_rate_is_valid(policy: Policy) -> None:
    assert check(points(0, 0, 1, 2, 3, 10, 10, 11), policy).valid


def test_more_than_the_burst_at_once_is_caught(policy: Policy) -> None:
    verdict = check(points(0, 0, 0), policy)
    assert [(v.kind, v.count) for v in verdict.violations] == [("over-admission", 1)]


def test_a_token_taken_before_it_refilled_is_caught(policy: Policy) -> None:
    assert not check(points(0, 0, 0.5), policy).valid


def test_an_admission_that_may_have_come_after_the_refill_is_excused(policy: Policy) -> None:
    assert check([*points(0, 0), op(0.5, 1.0)], policy).valid


def test_rejections_after_idling_are_wrongful_and_on_empty_are_not(policy: Policy) -> None:
    rightful = [*points(0, 0), op(0.5, 0.6, "rejected")]
    assert check(rightful, policy).valid
    verdict = check([*points(0, 0), op(5, 5.1, "rejected")], policy)
    assert [v.kind for v in verdict.violations] == ["wrongful-rejection"]


def test_unknown_admissions_may_have_emptied_the_bucket(policy: Policy) -> None:
    history = [*points(0), op(0, None, "unknown"), op(0.2, 0.3, "rejected")]
    assert check(history, policy).valid
