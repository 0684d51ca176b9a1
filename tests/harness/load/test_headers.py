import pytest
from hypothesis import given
from hypothesis import strategies as st

from ratelimit_harness.harness.load.contract import headers
from ratelimit_harness.harness.load.contract.headers import (
    Advertised,
    HeaderError,
    parse_headers,
    quota,
    response_headers,
)
from ratelimit_harness.limiters import Decision, Policy

NOW = 1000.0


def named(headers: list[tuple[str, str]]) -> dict[str, str]:
    assert len({name for name, _ in headers}) == len(headers)  # no header twice
    return dict(headers)


@pytest.mark.parametrize(
    ("spec", "q", "w", "field"),
    [
        ("fixed-window:limit=5,window=2", 5, 2.0, "q=5;w=2"),
        ("sliding-window:limit=10,window=60", 10, 60.0, "q=10;w=60"),
        ("sliding-counter:limit=3,window=0.5", 3, 0.5, "q=3;w=1"),  # w is a whole second, >= 1
        ("token-bucket:capacity=5,rate=2.5", 5, 2.0, "q=5;w=2"),
        ("gcra:capacity=10,rate=3", 10, 10 / 3, "q=10;w=4"),  # 3.33 s, rounded up
        ("leaky-bucket:rate=0.5,capacity=4", 4, 8.0, "q=4;w=8"),
        ("gcra:capacity=1,rate=10000000", 1, 1e-7, "q=1;w=1"),  # never w=0
    ],
)
def test_each_kind_states_its_quota_and_window(spec: str, q: int, w: float, field: str) -> None:
    policy = Policy.parse(spec)
    assert quota(policy) == (q, w)
    decision = Decision(allowed=True, remaining=1, reset_at=NOW + 1)
    headers = named(response_headers("r", policy, decision, NOW))
    assert headers["RateLimit-Policy"] == f'"r";{field}'
    assert headers["X-RateLimit-Limit"] == str(q)  # the policy's quota when the decision has none
    assert headers["RateLimit"] == '"r";r=1;t=1'


def test_a_policy_without_its_parameters_has_no_quota() -> None:
    with pytest.raises(ValueError, match="neither"):
        quota(Policy(kind="gcra", capacity=3))


def test_exact_headers_for_a_window_policy() -> None:
    decision = Decision(allowed=True, remaining=3, limit=5, reset_at=1001.5, retry_after=0)
    policy = Policy.parse("fixed-window:limit=5,window=2")
    assert response_headers("login", policy, decision, NOW) == [
        ("X-RateLimit-Limit", "5"),
        ("X-RateLimit-Remaining", "3"),
        ("X-RateLimit-Reset", "1002"),
        ("RateLimit-Policy", '"login";q=5;w=2'),
        ("RateLimit", '"login";r=3;t=2'),
    ]


def test_exact_headers_for_a_refused_bucket_request() -> None:
    decision = Decision(allowed=False, remaining=0, limit=5, reset_at=1002.0, retry_after=0.4)
    policy = Policy.parse("token-bucket:capacity=5,rate=2.5")
    assert response_headers("api", policy, decision, NOW) == [
        ("X-RateLimit-Limit", "5"),
        ("X-RateLimit-Remaining", "0"),
        ("X-RateLimit-Reset", "1002"),
        ("Retry-After", "1"),
        ("RateLimit-Policy", '"api";q=5;w=2'),
        ("RateLimit", '"api";r=0;t=2'),
    ]


@pytest.mark.parametrize(
    ("remaining", "retry_after", "reset_at", "expected"),
    [
        (0, 0.001, NOW + 9, "1"),  # any wait is at least a second
        (2, 3.2, NOW + 9, "4"),  # a refusal advertises nothing left, whatever the limiter said
        (0, None, NOW + 6.5, "7"),  # no retry_after: the time to reset
        (-4, 12.0, None, "12"),
        (0, 1e-7, None, "1"),
    ],
)
def test_a_refusal_says_when_to_retry_and_that_nothing_remains(
    remaining: int, retry_after: float | None, reset_at: float | None, expected: str
) -> None:
    decision = Decision(False, remaining=remaining, retry_after=retry_after, reset_at=reset_at)
    headers = named(response_headers("r", Policy.parse("gcra:capacity=2,rate=1"), decision, NOW))
    assert headers["Retry-After"] == expected
    assert int(headers["Retry-After"]) >= 1
    assert headers["X-RateLimit-Remaining"] == "0"
    assert headers["RateLimit"].startswith('"r";r=0')


def test_an_admission_sends_no_retry_after() -> None:
    decision = Decision(allowed=True, remaining=0, retry_after=5.0, reset_at=NOW + 5)
    headers = named(response_headers("r", Policy.parse("gcra:capacity=2,rate=1"), decision, NOW))
    assert "Retry-After" not in headers


def test_remaining_is_never_negative() -> None:
    decision = Decision(allowed=True, remaining=-2, reset_at=NOW + 1)
    headers = named(response_headers("r", Policy.parse("gcra:capacity=2,rate=1"), decision, NOW))
    assert (headers["X-RateLimit-Remaining"], headers["RateLimit"]) == ("0", '"r";r=0;t=1')


def test_what_a_decision_cannot_tell_is_left_out() -> None:
    policy = Policy.parse("sliding-window:limit=7,window=30")
    for allowed in (True, False):
        assert response_headers("r", policy, Decision(allowed), NOW) == [
            ("X-RateLimit-Limit", "7"),
            ("RateLimit-Policy", '"r";q=7;w=30'),
        ]
    without_reset = named(response_headers("r", policy, Decision(True, remaining=4), NOW))
    assert without_reset["RateLimit"] == '"r";r=4'
    assert "X-RateLimit-Reset" not in without_reset
    without_remaining = named(response_headers("r", policy, Decision(True, reset_at=NOW), NOW))
    assert without_remaining["X-RateLimit-Reset"] == "1000"
    assert {"RateLimit", "X-RateLimit-Remaining"}.isdisjoint(without_remaining)


@pytest.mark.parametrize(
    ("reset_at", "now", "epoch", "delta"),
    [
        (1000.2, 1000.0, "1001", "1"),
        (1004.1, 1000.0, "1005", "5"),
        (1005.0, 1000.0, "1005", "5"),  # already whole: unchanged
        (1_073_741_826.0004, 1_073_741_821.0004, "1073741827", "5"),  # 1.2e-7 s of float noise
        (990.0, 1000.0, "990", "0"),  # a reset in the past is due now
    ],
)
def test_reset_rounds_up(reset_at: float, now: float, epoch: str, delta: str) -> None:
    decision = Decision(allowed=True, remaining=1, reset_at=reset_at)
    headers = named(response_headers("r", Policy.parse("gcra:capacity=2,rate=1"), decision, now))
    assert headers["X-RateLimit-Reset"] == epoch
    assert headers["RateLimit"] == f'"r";r=1;t={delta}'


@pytest.mark.parametrize(
    ("rule", "spec", "decision", "expected"),
    [
        (
            "login",
            "fixed-window:limit=5,window=2",
            Decision(True, remaining=3, limit=5, reset_at=1001.5, retry_after=0.0),
            Advertised("login", 5, 3, 1002, None, 5, 2.0, 3, 2.0),
        ),
        (
            "api",
            "token-bucket:capacity=5,rate=2.5",
            Decision(False, remaining=0, limit=9, reset_at=1002.0, retry_after=0.4),
            Advertised("api", 9, 0, 1002, 1, 5, 2.0, 0, 2.0),
        ),
        (
            'odd "name" \\ here',
            "leaky-bucket:rate=0.5,capacity=4",
            Decision(False, remaining=0, retry_after=7.5),
            Advertised('odd "name" \\ here', 4, 0, None, 8, 4, 8.0, 0, None),
        ),
        (
            "bare",
            "sliding-counter:limit=3,window=0.5",
            Decision(True),
            Advertised("bare", 3, None, None, None, 3, 1.0, None, None),
        ),
    ],
)
def test_parsing_what_was_sent_recovers_the_numbers(
    rule: str, spec: str, decision: Decision, expected: Advertised
) -> None:
    sent = response_headers(rule, Policy.parse(spec), decision, NOW)
    assert parse_headers(named(sent)) == expected


def test_parsing_ignores_the_case_of_header_names() -> None:
    lower = {
        "x-ratelimit-limit": "5",
        "x-ratelimit-remaining": "0",
        "x-ratelimit-reset": "1002",
        "retry-after": "1",
        "ratelimit-policy": '"api";q=5;w=2',
        "ratelimit": '"api";r=0;t=2',
    }
    expected = Advertised("api", 5, 0, 1002, 1, 5, 2.0, 0, 2.0)
    assert parse_headers(lower) == expected
    assert parse_headers({key.upper(): value for key, value in lower.items()}) == expected
    assert parse_headers({key.title(): value for key, value in lower.items()}) == expected


def test_parsing_nothing_gives_nothing() -> None:
    assert parse_headers({}) == Advertised(None, None, None, None, None, None, None, None, None)


def test_parsing_follows_the_limit_nearest_its_end_and_ignores_extras() -> None:
    got = parse_headers(
        {
            "RateLimit-Policy": '"burst";q=100;w=60;qu="requests", "daily";q=1000;w=86400',
            "RateLimit": "daily;r=7, burst;r=50;t=30;pk=:cHsdsRa894==:;acme-x=?1",
        }
    )
    assert (got.policy_name, got.quota, got.window) == ("daily", 1000, 86400.0)
    assert (got.quota_remaining, got.reset_in) == (7, None)
    one = parse_headers({"RateLimit-Policy": '"burst";q=100;w=60, "daily";q=1000;w=86400'})
    assert (one.policy_name, one.quota) == ("burst", 100)  # no RateLimit: the first policy


def test_a_composite_policy_lists_every_limit_and_names_the_binding_one() -> None:
    policy = Policy.parse("fixed-window:limit=10,window=1 + fixed-window:limit=100,window=60")
    refused = Decision(False, 0, 100, NOW + 30, 30.0, NOW, binding=1)
    sent = dict(response_headers("api", policy, refused, NOW))
    assert sent["RateLimit-Policy"] == '"api.1";q=10;w=1, "api.2";q=100;w=60'
    assert sent["RateLimit"] == '"api.2";r=0;t=30'
    assert parse_headers(sent) == Advertised("api.2", 100, 0, 1030, 30, 100, 60.0, 0, 30.0)
    unnamed = dict(response_headers("api", policy, Decision(True, 4), NOW))
    assert "RateLimit" not in unnamed  # which limit has 4 left is not said: nothing invented
    assert "X-RateLimit-Limit" not in unnamed
    junk = dict(response_headers("api", policy, Decision(True, 4, binding=7), NOW))
    assert "RateLimit" not in junk


@pytest.mark.parametrize(
    ("header", "value"),
    [
        ("X-RateLimit-Limit", "ten"),
        ("X-RateLimit-Remaining", "-1"),
        ("X-RateLimit-Reset", "1002.5"),
        ("Retry-After", "Wed, 21 Oct 2015 07:28:00 GMT"),
        ("Retry-After", ""),
        ("RateLimit-Policy", '"a";w=10'),  # q is required
        ("RateLimit-Policy", '"a";q=1.5;w=10'),
        ("RateLimit-Policy", '"a";q=-1'),
        ("RateLimit-Policy", '"a";q=10;w=0'),
        ("RateLimit-Policy", '"a";q=10;w=2.5'),
        ("RateLimit-Policy", '"a";q=10;qu=requests'),  # qu is a String
        ("RateLimit-Policy", '"a";q=10;pk=abc'),  # pk is a Byte Sequence
        ("RateLimit-Policy", '"a";q=10,'),
        ("RateLimit-Policy", '"a;q=10'),
        ("RateLimit-Policy", '"a";q=10 junk'),
        ("RateLimit-Policy", ""),
        ("RateLimit", '"a";t=5'),  # r is required
        ("RateLimit", '"a";r=1;t=2.5'),
        ("RateLimit", "a;r=\u0661"),  # an Arabic-Indic one, not an ASCII digit
    ],
)
def test_malformed_values_are_refused(header: str, value: str) -> None:
    with pytest.raises(HeaderError):
        parse_headers({header: value})


def test_a_limit_for_another_policy_is_refused() -> None:
    with pytest.raises(HeaderError, match="no item"):
        parse_headers({"RateLimit-Policy": '"a";q=1', "RateLimit": '"b";r=1'})


def test_a_rule_name_no_string_can_hold_is_refused() -> None:
    with pytest.raises(HeaderError, match="ASCII"):
        response_headers("café", Policy.parse("gcra:capacity=2,rate=1"), Decision(True), NOW)


PARAM = st.tuples(
    st.sampled_from("qrtwx"), st.sampled_from(["0", "5", "05", "10", "999999999999999", "1" * 16])
)


@given(
    st.sampled_from(['"api"', '"a b.1"', '"quo\\\\te"', "token", '"semi;colon"', '""']),
    st.lists(PARAM, max_size=4).map(lambda ps: "".join(f";{k}={v}" for k, v in ps)),
    st.sampled_from(["", " ", "\t", ", next", ",", ";"]),
)
def test_one_item_read_quickly_reads_as_the_general_way(name: str, params: str, tail: str) -> None:
    value = f" {name}{params}{tail}"
    quick = headers._one_item(value)
    try:
        general: object = headers._listed_items(value, "RateLimit")
    except HeaderError:
        general = HeaderError
    assert quick is None or quick == general
    usual = name == '"api"' and params and tail.isspace()
    usual = usual and ";x=" not in params and ";w=0" not in params  # those go the general way
    if usual and general is not HeaderError:
        assert quick is not None  # the usual shape takes the quick road
