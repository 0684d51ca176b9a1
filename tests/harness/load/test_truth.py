import pytest
from hypothesis import given
from hypothesis import strategies as st

from ratelimit_harness.harness.load.contract.headers import response_headers
from ratelimit_harness.harness.load.judge import truth
from ratelimit_harness.harness.load.judge.truth import LIES, response_lies
from ratelimit_harness.limiters import Decision, Policy

NOW = 1_700_000_000.0
POLICIES = [
    Policy.parse(spec)
    for spec in (
        "fixed-window:limit=5,window=2",
        "sliding-window:limit=10,window=60",
        "sliding-counter:limit=3,window=0.5",
        "token-bucket:capacity=5,rate=2.5",
        "gcra:capacity=10,rate=3",
        "leaky-bucket:rate=0.5,capacity=4",
    )
]
XL, XR, RL, RP = "X-RateLimit-Limit", "X-RateLimit-Remaining", "RateLimit", "RateLimit-Policy"
LIMIT = {XL: "5", RP: '"api";q=5;w=2'}


def told(decision: Decision, policy: Policy) -> dict[str, str]:
    return dict(response_headers("api", policy, decision, NOW))


@st.composite
def honest(draw: st.DrawFn) -> tuple[Policy, Decision]:
    """A policy and a decision a correct limiter could give: an admission leaves less than the
    whole budget; a refusal may say anything (the headers say nothing remains)."""
    policy = draw(st.sampled_from(POLICIES))
    budget = policy.limit or policy.capacity or 1
    allowed = draw(st.booleans())
    remaining = st.integers(-3, budget - 1) if allowed else st.integers(-3, 2 * budget)
    seconds = st.floats(0, 3600, allow_nan=False)
    return policy, Decision(
        allowed,
        remaining=draw(st.none() | remaining),
        limit=draw(st.none() | st.just(budget)),
        reset_at=draw(st.none() | seconds.map(lambda s: NOW + s)),
        retry_after=draw(st.none() | seconds),
    )


@given(honest())
def test_headers_of_an_honest_decision_tell_no_lie(case: tuple[Policy, Decision]) -> None:
    policy, decision = case
    headers = told(decision, policy)
    lies, retry_after, remaining = response_lies(headers, 200 if decision.allowed else 429)
    assert lies == []
    advertised = headers.get("Retry-After")
    assert retry_after == (None if advertised is None else int(advertised))
    assert (retry_after is not None) <= (not decision.allowed)
    shown = headers.get("X-RateLimit-Remaining")
    assert remaining == (None if shown is None else int(shown))


@pytest.mark.parametrize(
    ("decision", "status", "expected"),
    [
        # an admission that leaves the whole budget: it did not count itself
        (Decision(True, remaining=5, limit=5, reset_at=NOW + 1), 200, ["remaining-over-budget"]),
        (Decision(True, remaining=9, limit=5), 200, ["remaining-over-budget"]),
        # a limit that is not the policy's quota
        (Decision(True, remaining=1, limit=4), 200, ["fields-disagree"]),
        (Decision(True, remaining=5, limit=4), 200, ["fields-disagree", "remaining-over-budget"]),
        # a refusal's headers say nothing remains, whatever the limiter said
        (Decision(False, remaining=3, limit=5, retry_after=1), 429, []),
        # the app answered 429 for an admission
        (Decision(True, remaining=3, limit=5), 429, ["remaining-after-refusal"]),
        (Decision(True, remaining=0, limit=5), 429, []),
    ],
)
def test_headers_of_a_lying_decision(decision: Decision, status: int, expected: list[str]) -> None:
    headers = told(decision, Policy.parse("fixed-window:limit=5,window=2"))
    assert response_lies(headers, status)[0] == expected


@pytest.mark.parametrize(
    ("headers", "status", "expected"),
    [
        # malformed: nothing else is read
        ({XR: "-1"}, 200, ["malformed"]),
        ({XL: "five"}, 200, ["malformed"]),
        ({"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}, 429, ["malformed"]),
        ({RP: '"api";w=2'}, 200, ["malformed"]),  # no q
        ({RP: '"api";q=5;w=0'}, 200, ["malformed"]),  # w > 0
        ({**LIMIT, RL: '"other";r=1'}, 200, ["malformed"]),  # not the policy's
        ({**LIMIT, RL: '"api";t=1'}, 200, ["malformed"]),  # no r
        ({**LIMIT, RL: '"api";r=1,'}, 200, ["malformed"]),
        # fields-disagree
        ({**LIMIT, XR: "3", RL: '"api";r=2'}, 200, ["fields-disagree"]),
        ({XL: "6", RP: '"api";q=5'}, 200, ["fields-disagree"]),
        # remaining-over-budget
        ({**LIMIT, XR: "5", RL: '"api";r=5'}, 200, ["remaining-over-budget"]),
        ({XL: "5", XR: "7"}, 201, ["remaining-over-budget"]),
        # remaining-after-refusal, and not over budget: a refusal is judged as a refusal
        ({**LIMIT, XR: "1", RL: '"api";r=1'}, 429, ["remaining-after-refusal"]),
        ({XL: "5", XR: "5"}, 429, ["remaining-after-refusal"]),
        # several at once, in the order of LIES
        (
            {**LIMIT, XR: "2", RL: '"api";r=0'},
            429,
            ["fields-disagree", "remaining-after-refusal"],
        ),
        # the truth, and nothing at all
        ({**LIMIT, XR: "4", RL: '"api";r=4'}, 200, []),
        ({**LIMIT, XR: "0", "Retry-After": "3"}, 429, []),
        ({}, 200, []),
        ({}, 429, []),
    ],
)
def test_hand_written_lies(headers: dict[str, str], status: int, expected: list[str]) -> None:
    lies = response_lies(headers, status).lies
    assert lies == expected
    assert set(lies) <= set(LIES)
    assert lies == sorted(lies, key=LIES.index)


def test_header_names_are_read_in_any_case() -> None:
    lower = {"x-ratelimit-limit": "5", "x-ratelimit-remaining": "5", "retry-after": "2"}
    assert response_lies(lower, 200) == (["remaining-over-budget"], 2, 5)


def test_a_malformed_response_advertises_no_retry_after() -> None:
    assert response_lies({"Retry-After": "2", "X-RateLimit-Limit": "x"}, 429) == (
        ["malformed"],
        None,
        None,
    )


def test_the_retry_after_of_a_refusal_is_returned() -> None:
    decision = Decision(False, remaining=0, limit=5, retry_after=2.2, reset_at=NOW + 9)
    headers = told(decision, Policy.parse("fixed-window:limit=5,window=2"))
    assert response_lies(headers, 429) == ([], 3, 0)


@pytest.mark.parametrize(
    ("headers", "status", "expected"),
    [
        ({RP: '"api";q=5;w=2', RL: '"api";r=3'}, 429, "remaining-after-refusal"),
        ({RP: '"api";q=5;w=2', RL: '"api";r=5'}, 200, "remaining-over-budget"),
    ],
)
def test_the_draft_headers_alone_can_lie(
    headers: dict[str, str], status: int, expected: str
) -> None:
    assert expected in response_lies(headers, status)[0]


NUMBER = st.integers(0, 10**15 - 1).map(str) | st.sampled_from(["", " 5", "05", "-1", "1.5", "٣"])
ARABIC_INDIC = str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")
# one way each to stray from the usual truth: the fast reader must see it, or say nothing
DEFECTS = (
    *("over budget", "r", "q", "other name", "digits", "long reset", "escape", "status"),
    "mutated",
)


@st.composite
def answers(draw: st.DrawFn) -> tuple[dict[str, str], int, bool]:
    """Headers of the usual shape, true or with one defect (``DEFECTS``), a status, and
    whether they are the usual truth."""
    defect = draw(st.none() | st.sampled_from(DEFECTS))
    name = '"quo\\\\te"' if defect == "escape" else f'"{draw(st.sampled_from(["api", "a b.1"]))}"'
    limit = draw(st.integers(1, 10**9))
    remaining = limit if defect == "over budget" else draw(st.integers(0, limit - 1))
    r = remaining + 1 if defect == "r" else remaining
    q = limit + 1 if defect == "q" else limit
    named = '"other"' if defect == "other name" else name
    left = str(remaining).translate(ARABIC_INDIC) if defect == "digits" else str(remaining)
    reset = 10**15 if defect == "long reset" else draw(st.integers(0, 10**12))
    headers = {
        "x-ratelimit-limit": str(limit),
        "x-ratelimit-remaining": left,
        "x-ratelimit-reset": str(reset),
        "ratelimit-policy": f"{name};q={q};w={draw(st.integers(1, 3600))}",
        "ratelimit": f"{named};r={r}" + draw(st.sampled_from(["", ";t=0", ";t=42"])),
    }
    status = 429 if defect == "status" else draw(st.sampled_from([200, 204]))
    if defect == "mutated":
        status = _mutate(draw, headers, status)
    return headers, status, defect is None


def _mutate(draw: st.DrawFn, headers: dict[str, str], status: int) -> int:
    """A field changed, dropped or added, or the status; the status then."""
    field = draw(st.sampled_from(sorted(headers)))
    kind = draw(st.sampled_from(["number", "drop", "extra", "status", "text"]))
    if kind == "number":
        headers[field] = draw(NUMBER)
    elif kind == "drop":
        del headers[field]
    elif kind == "extra":
        headers[draw(st.sampled_from(["retry-after", "x-ratelimit-unchecked"]))] = "1"
    elif kind == "status":
        status = draw(st.sampled_from([199, 299, 300, 429, 500]))
    else:
        headers[field] = draw(
            st.sampled_from(
                [
                    '"api";q=10;w=0',
                    '"api";q=10;w=1, "b";q=1;w=1',
                    ' "api";r=1 ',
                    '"api";t=1;r=1',
                    "api;r=1",
                ]
            )
        )
    return status


@given(answers())
def test_the_usual_answer_read_quickly_reads_as_the_general_way(
    case: tuple[dict[str, str], int, bool],
) -> None:
    headers, status, usual = case
    quick = truth._usual_truth(headers, status)
    assert quick is None or quick == truth._reading(headers, status)
    if usual:
        assert quick is not None  # the shape the instances send is read quickly
    assert response_lies(headers, status) == truth._reading(headers, status)
