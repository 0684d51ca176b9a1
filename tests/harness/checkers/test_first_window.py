"""fixed-window with anchor=first: windows started by the first admission after the last ended."""

import random

from ratelimit_harness.harness.checkers import Verdict, check
from ratelimit_harness.harness.history import Operation, Outcome
from ratelimit_harness.limiters import Policy
from ratelimit_harness.limiters.reference import Reference
from tests.clocks import ManualClock
from tests.harness.checkers.factory import op, points

POLICY = Policy.parse("fixed-window:limit=2,window=10,anchor=first")


def kinds(verdict: Verdict) -> dict[str, int]:
    return {v.kind: v.count for v in verdict.violations}


def test_a_window_runs_from_its_first_admission_not_from_a_multiple_of_the_window() -> None:
    assert check(points(5, 14, 15, 24), POLICY).valid
    verdict = check(points(5, 12, 14), POLICY)  # aligned windows would hold these
    assert kinds(verdict) == {"over-admission": 1}
    assert check(points(5, 12, 14), Policy.parse("fixed-window:limit=2,window=10")).valid


def test_the_next_window_starts_at_the_first_admission_after_the_last_ended() -> None:
    """Admissions at 1, 10.6, 10.8: [1, 11) holds all three, whatever comes after."""
    verdict = check(points(1, 10.6, 10.8), POLICY)
    assert kinds(verdict) == {"over-admission": 1}
    assert check(points(1, 11, 11.5), POLICY).valid


def test_an_unknown_operation_may_have_started_a_window_that_makes_room() -> None:
    """Counted at 0.5, the unknown one opens [0.5, 10.5): 1 joins it, 10.6 and 10.8 share the
    next. Counted nowhere, the history is invalid, so leaving it out is no benefit of the doubt."""
    unknown = op(0.5, None, "unknown")
    verdict = check([unknown, *points(1, 10.6, 10.8)], POLICY)
    assert verdict.valid
    assert not verdict.inconclusive


def test_a_window_ends_where_a_key_would_expire_give_or_take_a_millisecond() -> None:
    one = Policy.parse("fixed-window:limit=1,window=10,anchor=first")
    assert check(points(0, 10), one).valid
    assert check(points(0, 9.9995), one).valid
    assert kinds(check(points(0, 9.998), one)) == {"over-admission": 1}


def test_a_rejection_at_the_very_end_of_a_full_window_is_rightful() -> None:
    """As `limits` refuses: 3 admitted at t, the key still there at t + 10 (a key expires once
    the clock has passed its deadline), gone at t + 10.001."""
    policy = Policy.parse("fixed-window:limit=3,window=10,anchor=first")
    t = 1_700_000_000.0
    history = [*points(t, t, t), op(t + 10, t + 10, "rejected"), *points(t + 10.001)]
    assert check(history, policy).valid
    late = [*points(t, t, t), op(t + 10.002, t + 10.002, "rejected")]
    assert kinds(check(late, policy)) == {"wrongful-rejection": 1}


def test_a_rejection_with_the_window_before_it_not_full_is_wrongful() -> None:
    assert check([*points(1, 9), op(10.5, 10.5, "rejected")], POLICY).valid
    verdict = check([*points(1, 9), op(11.5, 11.5, "rejected")], POLICY)
    assert kinds(verdict) == {"wrongful-rejection": 1}


def test_an_admission_may_best_start_a_window_rather_than_join_one_with_room() -> None:
    """[1, 10] joining [0, 10) leaves 15, 20 and 24.9 to [15, 25); starting [10, 20) at 10, it
    leaves 20 and 24.9 to [20, 30). Earliest-deadline-first does the former; the search finds
    the latter."""
    verdict = check([*points(0), op(1, 10), *points(15, 20, 24.9)], POLICY)
    assert verdict.valid
    assert not verdict.inconclusive


def test_the_search_proves_there_is_no_way_when_no_span_is_too_full() -> None:
    """[0.5, 20] must start a window after [0, 10) ends, and then [10.5, 12] falls in it, or go
    after [10.5, 12], within a window of it. No span holds more than its room."""
    one = Policy.parse("fixed-window:limit=1,window=10,anchor=first")
    verdict = check([*points(0), op(10.5, 12), op(0.5, 20)], one)
    assert kinds(verdict) == {"over-admission": 1}
    assert "no windows started by admissions" in verdict.violations[0].witnesses[0].detail


def test_a_long_history_of_a_correct_limiter_is_valid() -> None:
    """50,000 decisions of the reference model, each recorded in an interval around its instant:
    valid, with nothing left undecided."""
    rng = random.Random(7)
    policy = Policy.parse("fixed-window:limit=5,window=2,anchor=first")
    clock = ManualClock(1_700_000_000.0)
    model = Reference(policy, clock=clock)
    history = []
    for i in range(50_000):
        clock.now += rng.expovariate(10.0)
        allowed = model.check("k").allowed
        outcome = Outcome.ALLOWED if allowed else Outcome.REJECTED
        before, after = rng.uniform(0, 0.002), rng.uniform(0, 0.002)
        history.append(Operation(f"p{i % 4}", "k", clock.now - before, clock.now + after, outcome))
    verdict = check(history, policy)
    assert verdict.valid
    assert not verdict.inconclusive
    assert verdict.operations == 50_000


def test_a_rejection_whose_window_started_after_a_full_one_ended_is_wrongful() -> None:
    """0 and 5 fill [0, 10); 11 starts [11, 21), which holds one at 12: the refusal is wrongful,
    though 5 and 11 lie within a window before it. If the second may have come at 10.5, it may
    have started the window 11 joined."""
    assert kinds(check([*points(0, 5, 11), op(12, 12, "rejected")], POLICY)) == {
        "wrongful-rejection": 1
    }
    assert check([*points(0), op(5, 10.5), *points(11), op(12, 12, "rejected")], POLICY).valid
