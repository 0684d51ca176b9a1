import re

import pytest

from ratelimit_harness.limiters import Policy, PolicyError


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("fixed-window:limit=5,window=2", Policy("fixed-window", limit=5, window=2.0)),
        (
            "fixed-window:limit=5,window=2,anchor=first",
            Policy("fixed-window", limit=5, window=2.0, anchor="first"),
        ),
        (
            "fixed-window:anchor=aligned,limit=5,window=2",
            Policy("fixed-window", limit=5, window=2.0),
        ),
        ("sliding-window:limit=5,window=0.5", Policy("sliding-window", limit=5, window=0.5)),
        ("sliding-counter:window=60, limit=100", Policy("sliding-counter", limit=100, window=60.0)),
        ("token-bucket:capacity=5,rate=2.5", Policy("token-bucket", capacity=5, rate=2.5)),
        ("gcra:capacity=5,rate=2.5", Policy("gcra", capacity=5, rate=2.5)),
        ("leaky-bucket:rate=10,capacity=50", Policy("leaky-bucket", capacity=50, rate=10.0)),
    ],
)
def test_parses_every_kind(spec: str, expected: Policy) -> None:
    assert Policy.parse(spec) == expected


def test_prints_back_as_a_spec_that_parses_to_itself() -> None:
    policy = Policy.parse("token-bucket:rate=2.5,capacity=5")
    assert str(policy) == "token-bucket:capacity=5,rate=2.5"
    assert Policy.parse(str(policy)) == policy
    assert policy.params() == {"capacity": 5, "rate": 2.5}


def test_an_anchor_prints_only_when_it_is_not_the_default_and_names_keys_apart() -> None:
    first = Policy.parse("fixed-window:anchor=first,window=2,limit=5")
    aligned = Policy.parse("fixed-window:limit=5,window=2,anchor=aligned")
    assert str(first) == "fixed-window:limit=5,window=2,anchor=first"
    assert str(aligned) == "fixed-window:limit=5,window=2"
    assert [Policy.parse(str(p)) for p in (first, aligned)] == [first, aligned]
    assert first.exact_params() != aligned.exact_params()
    assert (first.promise, aligned.promise) == ("fixed-window:anchor=first", "fixed-window")
    assert first.params() == aligned.params() == {"limit": 5, "window": 2.0}
    phased = Policy.parse("fixed-window:limit=5,window=2,phase=crc32")
    assert (phased.promise, Policy.parse(str(phased))) == ("fixed-window:phase=crc32", phased)
    assert phased.exact_params() != aligned.exact_params()


def test_a_block_prints_after_the_numbers_and_names_keys_apart() -> None:
    spec = "fixed-window:limit=5,window=2,block=30,anchor=first"
    blocked = Policy.parse(spec)
    assert (str(blocked), blocked.promise) == (spec, "fixed-window:anchor=first")
    assert blocked.exact_params() != Policy.parse("fixed-window:limit=5,window=2").exact_params()
    assert blocked.longest_need() == 32.0  # a window, then the block


def test_a_composite_joins_limits_of_any_kinds() -> None:
    spec = "fixed-window:limit=10,window=1 + token-bucket:capacity=100,rate=10"
    policy = Policy.parse(spec)
    assert str(policy) == spec
    assert Policy.parse(str(policy)) == policy
    assert policy.promise == "fixed-window + token-bucket"
    assert [limit.kind for limit in policy.limits] == ["fixed-window", "token-bucket"]
    assert policy.longest_need() == 10.0  # the bucket's refill from empty
    # each limit's exact parameters name its keys; two limits of one kind stay apart
    per_hour = Policy.parse("fixed-window:limit=10,window=1 + fixed-window:limit=1000,window=3600")
    assert per_hour.exact_params() == (
        "fixed-window:limit=10,window=1+fixed-window:limit=1000,window=3600"
    )


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("fixed-windows:limit=5,window=2", "unknown policy kind 'fixed-windows'"),
        ("", "unknown policy kind ''"),
        ("fixed-window", "fixed-window needs limit, window"),
        ("fixed-window:limit=5", "fixed-window needs window"),
        (
            "fixed-window:limit=5,window=2,rate=3",
            "fixed-window takes limit, window, block, anchor, phase, count; got 'rate'",
        ),
        (
            "fixed-window:limit=5,window=2,anchor=last",
            "anchor must be aligned or first, got 'last'",
        ),
        (
            "sliding-window:limit=5,window=2,anchor=first",
            "sliding-window takes limit, window, count; got",
        ),
        ("fixed-window:limit=5,limit=6,window=2", "limit given twice"),
        ("fixed-window:limit,window=2", "expected name=value, got 'limit'"),
        ("fixed-window:limit=five,window=2", "limit must be a whole number, got 'five'"),
        ("fixed-window:limit=5.5,window=2", "limit must be a whole number, got '5.5'"),
        ("fixed-window:limit=5,window=soon", "window must be a number, got 'soon'"),
        ("fixed-window:limit=0,window=2", "limit must be positive and finite, got '0'"),
        ("token-bucket:capacity=5,rate=-1", "rate must be positive and finite, got '-1'"),
        ("token-bucket:capacity=5,rate=inf", "rate must be positive and finite, got 'inf'"),
        ("token-bucket:capacity=5,rate=nan", "rate must be positive and finite, got 'nan'"),
        (
            "fixed-window:limit=5,window=2,anchor=first,phase=crc32",
            "a phase shifts aligned windows only, not anchor=first",
        ),
        ("fixed-window:limit=5,window=2,phase=md5", "phase must be none or crc32, got 'md5'"),
        ("fixed-window:limit=5,window=2,block=1", "a block lasts a window at least"),
        ("fixed-window:limit=5,window=2,block=0", "block must be positive and finite, got '0'"),
        ("sliding-window:limit=5,window=2,count=all", "count must be admissions or attempts"),
        ("fixed-window:limit=5,window=2 +", "expected a policy on each side of '+'"),
        (" + gcra:capacity=1,rate=1", "expected a policy on each side of '+'"),
        ("fixed-window:limit=5,window=2 + gcra:rate=1", "gcra needs capacity in 'gcra:rate=1'"),
    ],
)
def test_rejects_bad_specs_with_a_reason(spec: str, message: str) -> None:
    with pytest.raises(PolicyError, match="^" + re.escape(message)) as error:
        Policy.parse(spec)
    assert "\n" not in str(error.value)
