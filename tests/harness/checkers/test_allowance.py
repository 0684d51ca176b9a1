import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ratelimit_harness.harness.checkers.shared.allowance import allowance
from ratelimit_harness.limiters import Policy

FIXED = "fixed-window:limit=5,window=2"
SLIDING = "sliding-window:limit=5,window=2"
COUNTER = "sliding-counter:limit=5,window=2"
FIRST = "fixed-window:limit=5,window=2,anchor=first"
BUCKET = "token-bucket:capacity=5,rate=2.5"
GCRA = "gcra:capacity=5,rate=2.5"
LEAKY = "leaky-bucket:rate=10,capacity=50"


@pytest.mark.parametrize(
    ("spec", "first", "last", "expected"),
    [
        # fixed windows: the limit in each window the span touches
        (FIXED, 0, 0, 5),
        (FIXED, 0, 1.999, 5),
        (FIXED, 0, 2, 10),  # the next window begins at 2
        (FIXED, 1.9, 2.1, 10),  # 0.2 s, but across a boundary
        (FIXED, 2, 3.9, 5),
        (FIXED, 0, 10, 30),
        (FIXED, 1_700_000_001, 1_700_000_001.5, 5),  # epoch seconds
        (FIXED, 3, 1, 5),  # backwards: one window, never less
        (COUNTER, 1.9, 2.1, 10),  # the counter's windows are aligned too
        # windows started by admissions: one ending and one starting in any span but an instant
        (FIRST, 5, 5, 5),
        (FIRST, 0, 0.2, 10),
        (FIRST, 0, 2, 10),
        (FIRST, 0, 2.5, 15),
        (COUNTER, 0, 5, 15),
        # a sliding window: the limit in each window's length of the span, rounded up
        (SLIDING, 0, 0, 5),
        (SLIDING, 0, 1.9, 5),
        (SLIDING, 1.9, 2.1, 5),  # no boundary to cross
        (SLIDING, 0, 2.5, 10),
        (SLIDING, 0, 3.9, 10),
        (SLIDING, 5, 0, 5),
        # buckets: the capacity, then the rate
        (BUCKET, 0, 0, 5),
        (BUCKET, 0, 2, 10),
        (BUCKET, 10, 10.4, 6),
        (BUCKET, 2, 0, 5),
        (GCRA, 0, 4, 15),
        # the leaky bucket's departures: one, then the rate
        (LEAKY, 0, 0, 1),
        (LEAKY, 0, 1, 11),
        (LEAKY, 0, 0.25, 3.5),
        ("leaky-bucket:rate=0.5,capacity=1", 0, 10, 6),
    ],
)
def test_allowance(spec: str, first: float, last: float, expected: float) -> None:
    assert allowance(Policy.parse(spec), first, last) == pytest.approx(expected)


@pytest.mark.parametrize(("last", "expected"), [(2, 10), (4, 15)])
def test_a_sliding_window_span_of_whole_windows(last: float, expected: float) -> None:
    # admissions at 0 and at 2 are a window apart, so never in one window: 5 at each is correct
    assert allowance(Policy.parse(SLIDING), 0, last) == expected


def test_a_policy_without_its_parameters() -> None:
    with pytest.raises(ValueError, match="neither limit and window nor capacity and rate"):
        allowance(Policy(kind="gcra", capacity=3), 0, 1)


def most_admitted(policy: Policy, instants: list[float]) -> int:
    """How many of requests at ``instants`` (sorted) a correct limiter admits: at most the
    limit in each aligned window; a bucket starting full; departures 1/rate apart."""
    admitted = 0
    if policy.limit is not None and policy.window is not None:
        per_window: dict[int, int] = {}
        for t in instants:
            window = math.floor(t / policy.window)
            if per_window.get(window, 0) < policy.limit:
                per_window[window] = per_window.get(window, 0) + 1
                admitted += 1
        return admitted
    assert policy.capacity is not None
    assert policy.rate is not None
    if policy.kind == "leaky-bucket":
        departed = -math.inf
        for t in instants:
            if t - departed >= 1 / policy.rate:
                departed, admitted = t, admitted + 1
        return admitted
    tokens, then = float(policy.capacity), instants[0]
    for t in instants:
        tokens, then = min(policy.capacity, tokens + policy.rate * (t - then)), t
        if tokens >= 1:
            tokens, admitted = tokens - 1, admitted + 1
    return admitted


# quarter seconds, windows and rates that are powers of two: the arithmetic is exact
quarter = st.integers(0, 200).map(lambda n: n / 4)
quarters = st.lists(quarter, min_size=1, max_size=60)
policies = st.one_of(
    st.builds(
        lambda kind, limit, window: Policy(kind, limit=limit, window=window),
        st.sampled_from(["fixed-window", "sliding-counter"]),
        st.integers(1, 5),
        st.sampled_from([0.5, 1.0, 2.0, 4.0]),
    ),
    st.builds(
        lambda kind, capacity, rate: Policy(kind, capacity=capacity, rate=rate),
        st.sampled_from(["token-bucket", "gcra", "leaky-bucket"]),
        st.integers(1, 5),
        st.sampled_from([0.25, 0.5, 1.0, 2.0, 4.0]),
    ),
)


@given(policies, quarters)
def test_no_correct_limiter_admits_more_than_the_allowance(
    policy: Policy, instants: list[float]
) -> None:
    instants.sort()
    assert most_admitted(policy, instants) <= allowance(policy, instants[0], instants[-1])


@given(policies, st.lists(quarter, min_size=3, max_size=3))
def test_a_longer_span_allows_no_less(policy: Policy, instants: list[float]) -> None:
    first, middle, last = sorted(instants)
    whole = allowance(policy, first, last)
    assert allowance(policy, first, middle) <= whole
    assert allowance(policy, middle, last) <= whole
    least = 1 if policy.kind == "leaky-bucket" else policy.limit or policy.capacity
    assert allowance(policy, middle, middle) == least


def test_a_composite_allows_what_its_tightest_limit_does() -> None:
    per_second_and_ten = Policy.parse(f"{FIXED} + fixed-window:limit=7,window=10")
    assert allowance(per_second_and_ten, 0, 1) == 5  # the 2 s window's
    assert allowance(per_second_and_ten, 0, 9) == 7  # the 10 s window's: 25 by the other
