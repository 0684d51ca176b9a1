from ratelimit_harness.harness.checkers import Verdict, check
from ratelimit_harness.limiters import Policy
from tests.harness.checkers.factory import op, points

POLICY = Policy.parse("fixed-window:limit=2,window=10")


def kinds(verdict: Verdict) -> dict[str, int]:
    return {v.kind: v.count for v in verdict.violations}


def test_exactly_limit_in_a_window_is_valid() -> None:
    assert check(points(1, 2, 11, 19), POLICY).valid


def test_one_more_than_limit_is_caught_with_its_window() -> None:
    verdict = check(points(1, 2, 9.5), POLICY)
    assert not verdict.valid
    (violation,) = verdict.violations
    assert (violation.kind, violation.count) == ("over-admission", 1)
    (witness,) = violation.witnesses
    assert witness.span == (0, 10)
    assert len(witness.operations) == 3
    assert witness.processes == ["p0", "p1", "p2"]


def test_a_straddling_admission_may_fall_in_the_next_window() -> None:
    history = [*points(5, 6), op(9.9, 10.2)]
    assert check(history, POLICY).valid


def test_a_straddling_admission_between_two_full_windows_has_no_escape() -> None:
    history = [*points(1, 2, 11, 12), op(9.9, 10.1)]
    verdict = check(history, POLICY)
    assert kinds(verdict) == {"over-admission": 1}
    assert verdict.violations[0].witnesses[0].span == (0, 20)


def test_unknown_outcomes_are_not_counted_as_admissions() -> None:
    assert check([*points(1, 2), op(3, None, "unknown"), op(4, 5, "unknown")], POLICY).valid


def test_errors_are_ignored_and_keys_counted_apart() -> None:
    history = [*points(1, 2), op(3, 3, "error"), op(4, key="other"), op(5, key="other")]
    assert check(history, POLICY).valid


def test_many_excess_admissions_are_all_counted() -> None:
    verdict = check(points(1, 1, 1, 1, 1, 15, 15, 15), POLICY)
    assert kinds(verdict) == {"over-admission": 4}


def test_a_rejection_with_room_left_is_wrongful() -> None:
    verdict = check([*points(1), op(2, 2.1, "rejected")], POLICY)
    assert kinds(verdict) == {"wrongful-rejection": 1}


def test_a_rejection_at_the_limit_is_rightful() -> None:
    assert check([*points(1, 2), op(3, 3.1, "rejected")], POLICY).valid


def test_an_unknown_operation_may_have_used_the_room() -> None:
    assert check([*points(1), op(1.5, None, "unknown"), op(3, 3.1, "rejected")], POLICY).valid


def test_a_rejection_straddling_the_boundary_may_belong_to_the_full_window() -> None:
    assert check([*points(1, 2), op(9.95, 10.05, "rejected")], POLICY).valid
    assert not check([*points(1, 2), op(10.05, 10.1, "rejected")], POLICY).valid


def test_immortal_keys_come_from_the_snapshot() -> None:
    verdict = check(points(1), POLICY, ttls={"ratelimit:{a}": -1, "ratelimit:{b}": 3.0})
    assert kinds(verdict) == {"immortal-key": 1}
    assert verdict.violations[0].witnesses[0].key == "ratelimit:{a}"


def test_a_key_used_by_two_identities_is_a_collision() -> None:
    history = [
        op(1, key="user:1")._replace(keys=("rl:user1",)),
        op(2, key="user:12")._replace(keys=("rl:user12",)),
        op(3, key="user:1")._replace(keys=("rl:user123",)),
        op(4, key="user:12")._replace(keys=("rl:user123",)),
    ]
    verdict = check(history, POLICY)
    assert kinds(verdict) == {"collision": 1}
    witness = verdict.violations[0].witnesses[0]
    assert witness.key == "rl:user123"
    assert "user:1, user:12" in witness.detail


def test_windows_before_time_zero_count_like_any_other() -> None:
    """Issue 11: windows are numbered from the epoch, negative before it."""
    policy = Policy.parse("fixed-window:limit=2,window=3")
    assert check(points(-1.25), policy).valid
    assert check(points(-4, -3.5, -1.25, -0.5), policy).valid  # two in [-6, -3), two in [-3, 0)
    verdict = check(points(-2.5, -1.25, -0.5, 1), policy)
    assert kinds(verdict) == {"over-admission": 1}
    assert verdict.violations[0].witnesses[0].span == (-3, 0)


def test_a_rejection_completing_at_zero_is_judged_up_to_zero() -> None:
    policy = Policy.parse("fixed-window:limit=1,window=1")
    assert check([op(0.0), op(-0.25, 0.0, "rejected")], policy).valid  # at 0, window [0, 1) full
    assert not check([op(0.0), op(-0.25, -0.1, "rejected")], policy).valid


def test_an_admission_within_a_millisecond_of_an_edge_may_count_on_its_other_side() -> None:
    """The edge rule: a limiter's window may be closed at its end, or its clock a millisecond
    from the recorder's; two milliseconds away, it may not."""
    assert check(points(1, 2, 9.9995, 11), POLICY).valid  # 9.9995 may count in [10, 20)
    assert kinds(check(points(1, 2, 9.998, 11), POLICY)) == {"over-admission": 1}
    assert check(points(1, 10.0005, 11, 12), POLICY).valid  # 10.0005 may count in [0, 10)
    assert kinds(check(points(1, 10.002, 11, 12), POLICY)) == {"over-admission": 1}


def test_a_rejection_within_a_millisecond_after_the_end_of_a_full_window_is_rightful() -> None:
    assert check([*points(1, 2), op(10.0, 10.0, "rejected")], POLICY).valid
    assert check([*points(1, 2), op(10.0009, 10.0009, "rejected")], POLICY).valid
    verdict = check([*points(1, 2), op(10.002, 10.002, "rejected")], POLICY)
    assert kinds(verdict) == {"wrongful-rejection": 1}


def test_an_admission_a_millisecond_before_the_window_may_have_filled_it() -> None:
    # the limiter's clock may have put 9.9995 in the window [10, 20) the rejection is in
    assert check([*points(9.9995, 10.5), op(11, 11, "rejected")], POLICY).valid
    verdict = check([*points(9.998, 10.5), op(11, 11, "rejected")], POLICY)
    assert kinds(verdict) == {"wrongful-rejection": 1}


def test_one_convention_holds_at_every_edge() -> None:
    """Two admitted at the very instant of an edge share a window whichever side the limiter
    puts its edges on; so do two of three within a millisecond of it, while one on each side of
    the edge is where it is. Edges may sit a millisecond early, or late, but all alike."""
    one = Policy.parse("fixed-window:limit=1,window=10")
    verdict = check(points(10, 10), one)
    assert kinds(verdict) == {"over-admission": 1}
    assert "shifted by up to 1 ms" in verdict.violations[0].witnesses[0].detail
    assert check(points(9.9995, 10.0005), one).valid
    assert kinds(check(points(9.9995, 9.9999, 10.0005), one)) == {"over-admission": 1}
    two = Policy.parse("fixed-window:limit=2,window=10")
    assert check(points(5, 9.9995, 9.9999, 15), two).valid  # [0, 10) ends before 9.9995
