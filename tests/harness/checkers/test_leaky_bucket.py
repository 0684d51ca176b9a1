from ratelimit_harness.harness.checkers import check
from ratelimit_harness.limiters import Policy
from tests.harness.checkers.factory import op

POLICY = Policy.parse("leaky-bucket:rate=10,capacity=2")


def test_departures_at_the_rate_are_valid() -> None:
    history = [op(0.1 * i, 0.1 * i + 0.01, now=0.0) for i in range(3)]
    assert check(history, POLICY).valid


def test_departures_faster_than_the_rate_are_caught() -> None:
    assert not check([op(0, now=0), op(0.05, now=0)], POLICY).valid


def test_a_queue_longer_than_capacity_is_caught() -> None:
    history = [op(0.1 * i, now=0.0) for i in range(5)]  # at 0: four accepted, not departed
    verdict = check(history, POLICY)
    (violation,) = verdict.violations
    assert (violation.kind, violation.count) == ("over-admission", 2)


def test_a_rejection_with_room_in_the_queue_is_wrongful() -> None:
    history = [op(0.0, now=0.0), op(0.1, now=0.0), op(0.0, 0.01, "rejected")]
    verdict = check(history, POLICY)
    assert [v.kind for v in verdict.violations] == ["wrongful-rejection"]
    full = [op(0.0, now=0.0), op(0.1, now=0.0), op(0.2, now=0.0), op(0.0, 0.01, "rejected")]
    assert check(full, POLICY).valid


def test_an_allowed_call_that_never_said_when_it_was_queued_may_have_waited() -> None:
    """Without its ``now``, it may have been accepted long before its departure."""
    history = [op(0.3), op(0.4), op(0.0, 0.01, "rejected")]
    assert check(history, POLICY).valid
    assert not check([op(0.3, now=0.2), op(0.4, now=0.2), op(0.0, 0.01, "rejected")], POLICY).valid


def test_calls_a_rate_apart_leave_the_queue_too_slowly() -> None:
    # one place, one call a second: three accepted at 0 cannot all have left by 0.5
    policy = Policy.parse("leaky-bucket:rate=1,capacity=1")
    verdict = check([op(0, 2, now=0.0), op(0, 2, now=0.0), op(0, 2, now=0.0)], policy)
    assert [(v.kind, v.count) for v in verdict.violations] == [("over-admission", 1)]
    assert check([op(0, 2, now=0.0), op(1, 2, now=0.5), op(2, 3, now=1.5)], policy).valid
