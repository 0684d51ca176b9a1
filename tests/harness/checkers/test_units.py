"""Weighted requests, composite policies, and keys kept too long."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from ratelimit_harness.harness.checkers import check
from ratelimit_harness.limiters.policy import Policy
from tests.harness.checkers.factory import op

WINDOW = Policy.parse("fixed-window:limit=5,window=1")
BUCKET = Policy.parse("token-bucket:capacity=5,rate=1")
PER_SECOND_AND_PER_TEN = Policy.parse(
    "fixed-window:limit=2,window=1 + fixed-window:limit=3,window=10"
)


def test_a_window_holds_units_not_requests() -> None:
    assert check([op(0.1, cost=2), op(0.2, cost=3)], WINDOW).valid
    verdict = check([op(0.1, cost=3), op(0.2, cost=3)], WINDOW)
    assert verdict.kinds == {"over-admission"}
    (witness,) = verdict.of_kind("over-admission")[0].witnesses
    assert len(witness.operations) == 2  # each request once, not once per unit
    assert witness.excess == 1  # one unit too many


def test_a_weighted_rejection_is_wrongful_only_when_all_its_units_fit() -> None:
    right = check([op(0.1, cost=3), op(0.2, outcome="rejected", cost=3)], WINDOW)
    assert right.valid
    wrong = check([op(0.1, cost=3), op(0.2, outcome="rejected", cost=2)], WINDOW)
    assert wrong.kinds == {"wrongful-rejection"}
    assert "it asked for 2" in wrong.of_kind("wrongful-rejection")[0].witnesses[0].detail


def test_a_bucket_refuses_a_request_larger_than_it_holds_without_draining() -> None:
    oversized = op(0.0, outcome="rejected", cost=6)
    assert check([oversized], BUCKET).valid
    # the drained bucket refuses the next request too: there were 5 tokens for it
    drained = check([oversized, op(0.5, outcome="rejected")], BUCKET)
    assert drained.kinds == {"wrongful-rejection"}


def test_a_composite_is_over_admitted_when_any_limit_is() -> None:
    verdict = check([op(0.1), op(0.2), op(1.1), op(1.2)], PER_SECOND_AND_PER_TEN)
    assert verdict.kinds == {"over-admission"}
    (witness,) = verdict.of_kind("over-admission")[0].witnesses
    assert witness.detail.startswith("under fixed-window:limit=3,window=10: ")


def test_a_composite_rejection_is_wrongful_only_if_every_limit_had_room() -> None:
    full_second = check([op(0.1), op(0.2), op(0.3, outcome="rejected")], PER_SECOND_AND_PER_TEN)
    assert full_second.valid
    verdict = check([op(0.1), op(0.2), op(1.3, outcome="rejected")], PER_SECOND_AND_PER_TEN)
    assert verdict.kinds == {"wrongful-rejection"}
    detail = verdict.of_kind("wrongful-rejection")[0].witnesses[0].detail
    assert "under fixed-window:limit=2,window=1: " in detail
    assert "under fixed-window:limit=3,window=10: " in detail


def test_limits_kept_apart_but_not_together_are_inconclusive_not_valid() -> None:
    # the request at [1.75, 2.75] must come before 2.0 for the fixed windows, and at 2.75 for
    # the sliding window: each limit alone has a placement, the two have none
    policy = Policy.parse("fixed-window:limit=1,window=1 + sliding-window:limit=2,window=2")
    verdict = check([op(0.75), op(1.75, 2.75), op(2.25)], policy)
    assert verdict.valid
    assert [w.key for w in verdict.inconclusive] == ["k"]
    # at one instant for both, 2.0, it is kept: valid, and nothing left undecided
    kept = check([op(0.75), op(1.75, 2.75, now=2.0), op(3.0)], policy)
    assert kept.valid
    assert not kept.inconclusive


def test_a_key_kept_ten_times_longer_than_the_policy_needs_is_excess() -> None:
    ttls = {"short": 9.0, "long": 10.5, "forever": -1}
    verdict = check([op(0.1)], WINDOW, ttls)  # a 1 s window: 10 s at most
    assert verdict.kinds == {"excess-ttl", "immortal-key"}
    (witness,) = verdict.of_kind("excess-ttl")[0].witnesses
    assert witness.key == "long"
    per_day = Policy.parse("fixed-window:limit=5,window=1 + fixed-window:limit=50,window=86400")
    assert check([op(0.1)], per_day, {"long": 10.5}).valid  # the longest limit sets the need


def test_without_a_snapshot_no_key_is_judged() -> None:
    assert "excess-ttl" not in check([op(0.1)], WINDOW).checked
    assert "excess-ttl" in check([op(0.1)], WINDOW, {}).checked


def test_each_identitys_windows_start_at_its_own_phase() -> None:
    policy = Policy.parse("fixed-window:limit=1,window=10,phase=crc32")
    assert policy.origin("user:1") == 3.0  # crc32("user:1") + 1 is 3 modulo 10
    # 2.5 and 3.5 fall in two of user:1's windows, [-7, 3) and [3, 13): both may be admitted
    assert check([op(2.5, key="user:1"), op(3.5, key="user:1")], policy).valid
    aligned = Policy.parse("fixed-window:limit=1,window=10")
    assert not check([op(2.5, key="user:1"), op(3.5, key="user:1")], aligned).valid
    # and 3.5 has room in the window its own phase gives it
    refused = [op(2.5, key="user:1"), op(3.5, outcome="rejected", key="user:1")]
    assert check(refused, policy).kinds == {"wrongful-rejection"}
    # a witness names the window as the identity's phase sets it
    verdict = check([op(3.5, key="user:1"), op(4.5, key="user:1")], policy)
    assert verdict.of_kind("over-admission")[0].witnesses[0].span == (3.0, 13.0)


def test_a_limiter_that_counts_attempts_is_not_accused_for_it() -> None:
    refused_twice = [op(0.1), op(0.2, outcome="rejected"), op(0.3, outcome="rejected")]
    admissions = Policy.parse("fixed-window:limit=2,window=1")
    assert check(refused_twice, admissions).kinds == {"wrongful-rejection"}
    attempts = Policy.parse("fixed-window:limit=2,window=1,count=attempts")
    # the second attempt was refused wrongly (1 before it); the third had 2 before it
    (witness,) = check(refused_twice, attempts).of_kind("wrongful-rejection")[0].witnesses
    assert witness.operations[0].invoke == 0.2
    assert "at most 1 of 2 admissions in its window before it" in witness.detail
    # a refusal of 2 counts 2: the request after it has 3 attempts before it
    weighted = [op(0.1), op(0.2, outcome="rejected", cost=2), op(0.3, outcome="rejected")]
    assert check(weighted, attempts).valid
    assert check(weighted, admissions).kinds == {"wrongful-rejection"}  # 1 of 2 was used
    sliding = Policy.parse("sliding-window:limit=2,window=1,count=attempts")
    assert check(refused_twice[:1] + refused_twice[2:], sliding).kinds == {"wrongful-rejection"}


def test_a_block_excuses_the_rejections_within_it_and_no_later_one() -> None:
    blocked = Policy.parse("fixed-window:limit=1,window=10,anchor=first,block=60")
    plain = Policy.parse("fixed-window:limit=1,window=10,anchor=first")
    # the window from 0 is full at 1; refused from 1 on, for 60 s: 30 is in the block
    history = [op(0.0), op(1.0, outcome="rejected"), op(30.0, outcome="rejected")]
    assert check(history, plain).kinds == {"wrongful-rejection"}  # 30 had a fresh window
    assert check(history, blocked).valid
    # 62 is past the block of 1: a fresh budget, so refusing it is wrongful
    late = [*history[:2], op(62.0, outcome="rejected")]
    (witness,) = check(late, blocked).of_kind("wrongful-rejection")[0].witnesses
    assert witness.operations[0].invoke == 62.0
    # an unknown operation may have been the refusal that started a block
    unknown = [op(0.0), op(1.0, 1.5, "unknown"), op(30.0, outcome="rejected")]
    assert check(unknown, blocked).valid
    assert check(unknown, plain).kinds == {"wrongful-rejection"}


def test_a_block_renewed_by_the_refusals_within_it_is_caught() -> None:
    blocked = Policy.parse("fixed-window:limit=1,window=10,anchor=first,block=20")
    # 1 starts a block until 21; 15 is inside it, so it starts none: refusing 22 is wrongful,
    # as a limiter does that starts the block again with every refusal in it
    renewed = [op(0.0), op(1.0, outcome="rejected"), op(15.0, outcome="rejected")]
    late = op(22.0, outcome="rejected")
    (witness,) = check([*renewed, late], blocked).of_kind("wrongful-rejection")[0].witnesses
    assert witness.operations == [late]
    # had 1 been refused late, up to 16, 15 may have come first and started the block itself
    unsure = [op(0.0), op(1.0, 16.0, "rejected"), op(15.0, outcome="rejected"), late]
    assert check(unsure, blocked).valid
    # an unknown operation at 11 may have been a refusal, but inside the block, so it started
    # none either (had it been admitted, its window ended before 22): 22 is still wrongful
    inside = [*renewed[:2], op(11.0, 11.5, "unknown"), late]
    assert check(inside, blocked).kinds == {"wrongful-rejection"}
    # in a composite, 15 may have been refused by the other limit, outside any block
    both = Policy.parse(f"{blocked} + fixed-window:limit=9,window=60")
    assert check([*renewed, late], both).valid


@settings(deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 240), st.integers(0, 8), st.integers(0, 8), st.booleans()),
        max_size=40,
    )
)
def test_a_correct_blocking_limiter_is_never_accused(
    requests: list[tuple[int, int, int, bool]],
) -> None:
    """A model of the promise: windows of 5 s started by admissions, 2 each; the request that
    finds its window full is refused and blocks the identity for 15 s, then a fresh window.
    Each request is decided at its instant, and recorded over an interval around it (up to 2 s
    either side); some are recorded unknown."""
    started, held, blocked_until = -math.inf, 0, -math.inf
    history = []
    for quarter, before, after, lost in sorted(requests):
        t = quarter / 4
        if t < blocked_until:
            allowed = False
        elif t >= started + 5:
            started, held, allowed = t, 1, True
        elif held < 2:
            held, allowed = held + 1, True
        else:
            started, blocked_until, allowed = -math.inf, t + 15, False
        outcome = "unknown" if lost else "allowed" if allowed else "rejected"
        history.append(op(t - before / 4, t + after / 4, outcome))
    policy = Policy.parse("fixed-window:limit=2,window=5,anchor=first,block=15")
    assert check(history, policy).valid
