import pytest

from ratelimit_harness.harness.checkers import check
from ratelimit_harness.limiters import Policy
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


def test_a_rejection_with_one_token_left_is_wrongful(policy: Policy) -> None:
    """Issue 11: the bucket was full, one admission took a token, one was left to refuse."""
    verdict = check([*points(1.0), op(1.0, 1.0, "rejected")], policy)
    assert [v.kind for v in verdict.violations] == ["wrongful-rejection"]
    assert check([*points(1.0, 1.0), op(1.0, 1.0, "rejected")], policy).valid


def test_a_refill_to_exactly_one_token_is_a_whole_token(policy: Policy) -> None:
    # emptied at 0, one token back at 1.0 exactly: refusing then is wrongful, a hair before not
    verdict = check([*points(0, 0), op(1.0, 1.0, "rejected")], policy)
    assert [v.kind for v in verdict.violations] == ["wrongful-rejection"]
    assert check([*points(0, 0), op(0.999, 0.999, "rejected")], policy).valid


def test_exactness_holds_at_epoch_seconds(policy: Policy) -> None:
    t = 1_700_000_000.25
    verdict = check([*points(t, t), op(t + 1.0, t + 1.0, "rejected")], policy)
    assert [v.kind for v in verdict.violations] == ["wrongful-rejection"]
    assert check([*points(t, t), op(t + 0.999, t + 0.999, "rejected")], policy).valid


def test_a_bucket_refilled_by_quarters_refuses_with_one_token_left() -> None:
    """The issue's history: from full at 2.75, one admission every 1 / rate; at 3.75 the bucket
    holds 2 again, the admission there leaves one, so the rejection there is wrongful."""
    policy = Policy.parse("token-bucket:capacity=2,rate=4")
    admissions = points(2.75, 3.0, 3.25, 3.5, 3.75)
    verdict = check([*admissions, op(3.75, 3.75, "rejected")], policy)
    assert [v.kind for v in verdict.violations] == ["wrongful-rejection"]
    assert check([*admissions, *points(3.75), op(3.75, 3.75, "rejected")], policy).valid


def test_a_rejection_completing_at_zero_may_have_come_after_an_admission(policy: Policy) -> None:
    empty = Policy(policy.kind, capacity=1, rate=1)
    assert check([op(0.0), op(-0.25, 0.0, "rejected")], empty).valid
    assert not check([op(0.0), op(-0.25, -0.1, "rejected")], empty).valid
