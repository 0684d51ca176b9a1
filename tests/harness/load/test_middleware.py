"""Which rule holds a request, and whose request it is."""

from __future__ import annotations

import asyncio
import math
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import pytest

from ratelimit_harness.harness.history import Operation, Outcome
from ratelimit_harness.harness.history.merge import merge_journals
from ratelimit_harness.harness.load.contract.journals import Journals, journal_paths
from ratelimit_harness.harness.load.contract.rules import (
    DEFAULT_OUTBOUND,
    Rule,
    RulesError,
    validated,
)
from ratelimit_harness.harness.load.judge.client_view import outcome_of
from ratelimit_harness.harness.load.system.middleware import RateLimitMiddleware, held_by
from ratelimit_harness.limiters import Decision, Limiter, Policy

POLICY = "fixed-window:limit=1,window=1"
RULES = validated(
    [
        Rule("partners", "/partner/*", "fixed-window-lua", POLICY, identity="X-Partner"),
        Rule("api-pro", "/api/*", "fixed-window-lua", POLICY, tier="pro"),
        Rule("api", "/api/*", "fixed-window-lua", POLICY),
    ],
    DEFAULT_OUTBOUND,
)


def scope(path: str, peer: str = "127.0.0.1", **headers: str) -> dict[str, Any]:
    raw = [(k.replace("_", "-").lower().encode(), v.encode()) for k, v in headers.items()]
    return {"type": "http", "path": path, "headers": raw, "client": (peer, 5000)}


@pytest.mark.parametrize(
    ("request_scope", "expected"),
    [
        (scope("/api/x", x_api_key="team-1"), ("api", "team-1")),
        (scope("/api/x", x_api_key="pro-1"), ("api-pro", "pro-1")),
        (scope("/partner/x", x_partner="acme"), ("partners", "acme")),
        # the partners' rule reads its own header: X-API-Key means nothing to it
        (scope("/partner/x", x_api_key="team-1"), ("partners", "127.0.0.1")),
        (scope("/partner/x", x_partner="pro-acme"), ("partners", "pro-acme")),
        (scope("/api/x", x_forwarded_for="10.0.0.7, 127.0.0.1"), ("api", "10.0.0.7")),
        # a forwarded address is believed only from a peer on loopback
        (scope("/api/x", "192.0.2.1", x_forwarded_for="10.0.0.7"), ("api", "192.0.2.1")),
    ],
)
def test_each_rule_reads_the_identity_from_its_own_header(
    request_scope: dict[str, Any], expected: tuple[str, str]
) -> None:
    held = held_by(RULES, request_scope)
    assert held is not None
    rule, identity = held
    assert (rule.name, identity) == expected


def test_a_request_no_rule_holds() -> None:
    assert held_by(RULES, scope("/healthz", x_api_key="team-1")) is None


# --- a limiter that fails: the rule's on_error ------------------------------------------


class Failing(Limiter):
    policy = Policy.parse(POLICY)

    def check(self, key: str) -> Decision:
        raise ConnectionError("Redis is gone")


async def answered(rule: Rule, tmp_path: Path) -> tuple[int, dict[str, str], list[Outcome]]:
    rules = validated([rule], DEFAULT_OUTBOUND)
    journals = Journals(tmp_path, "server", "app-0")
    sent: list[MutableMapping[str, Any]] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b""}

    middleware = RateLimitMiddleware(app, rules, {rule.name: Failing()}, journals, tag="t")
    await middleware(scope("/api/x", x_api_key="team-1"), receive, send)
    journals.close()
    start = sent[0]
    headers = {k.decode(): v.decode() for k, v in start["headers"]}
    history = merge_journals(journal_paths(tmp_path, "server", rule.name))
    return start["status"], headers, [op.outcome for op in history]


@pytest.mark.parametrize(
    ("on_error", "status", "unchecked"), [("closed", 503, False), ("open", 200, True)]
)
def test_a_failing_limiter_refuses_or_admits_unchecked_as_its_rule_says(
    tmp_path: Path, on_error: str, status: int, unchecked: bool
) -> None:
    rule = Rule("api", "/api/*", "fixed-window-lua", POLICY, on_error=on_error)
    got, headers, outcomes = asyncio.run(answered(rule, tmp_path))
    assert got == status
    assert ("x-ratelimit-unchecked" in headers) == unchecked
    assert "x-ratelimit-remaining" not in headers  # nothing invented
    assert outcomes == [Outcome.UNKNOWN]  # it may or may not have counted, either way
    # and the clients judge an unchecked admission no admission
    assert outcome_of(got, unchecked) is Outcome.UNKNOWN
    assert outcome_of(200) is Outcome.ALLOWED


def test_on_error_is_closed_or_open() -> None:
    with pytest.raises(RulesError, match="on_error 'ajar' is not one of closed, open"):
        validated(
            [Rule("api", "/api/*", "fixed-window-lua", POLICY, on_error="ajar")], DEFAULT_OUTBOUND
        )


# --- what a request costs: the rule's number, or its header -----------------------------


class Counting(Limiter):
    """Admits every request, noting what each was asked to cost."""

    policy = Policy.parse(POLICY)

    def __init__(self) -> None:
        self.asked: list[tuple[object, ...]] = []

    def check(self, *asked: object) -> Decision:
        self.asked.append(asked[1:])
        return Decision(allowed=True, remaining=0, limit=1)


Costed = tuple[int, list[int], list[tuple[object, ...]]]  # status, journalled, asked


async def costed(rule: Rule, tmp_path: Path, **headers: str) -> Costed:
    rules = validated([rule], DEFAULT_OUTBOUND)
    journals = Journals(tmp_path, "server", "app-0")
    limiter = Counting()
    statuses: list[int] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    async def send(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b""}

    middleware = RateLimitMiddleware(app, rules, {rule.name: limiter}, journals, tag="t")
    await middleware(scope("/api/x", x_api_key="team-1", **headers), receive, send)
    journals.close()
    history = merge_journals(journal_paths(tmp_path, "server", rule.name))
    return statuses[0], [op.cost for op in history], limiter.asked


@pytest.mark.parametrize(
    ("cost", "headers", "expected"),
    [
        ("1", {}, (200, [1], [()])),  # a request of cost 1 is asked as it always was
        ("3", {}, (200, [3], [(3,)])),
        ("X-Cost", {"x_cost": "4"}, (200, [4], [(4,)])),
        ("X-Cost", {}, (200, [1], [()])),  # no header: it costs 1
        ("X-Cost", {"x_cost": "0"}, (400, [], [])),  # refused before the limiter, unjournalled
        ("X-Cost", {"x_cost": "lots"}, (400, [], [])),
    ],
)
def test_a_request_costs_the_rules_number_or_its_header(
    tmp_path: Path, cost: str, headers: dict[str, str], expected: Costed
) -> None:
    rule = Rule("api", "/api/*", "fixed-window-lua", POLICY, cost=cost)
    assert asyncio.run(costed(rule, tmp_path, **headers)) == expected


@pytest.mark.parametrize(
    ("cost", "message"),
    [("0", "a request costs 1 or more"), ("X Cost", "neither a whole number nor a header name")],
)
def test_a_cost_is_a_whole_number_or_a_header_name(cost: str, message: str) -> None:
    with pytest.raises(RulesError, match=message):
        validated([Rule("api", "/api/*", "fixed-window-lua", POLICY, cost=cost)], DEFAULT_OUTBOUND)


# --- giving back a request the app failed: the rule's refund ------------------------------


class GivingBack(Counting):
    """Admits every request, noting each give-back; raises on one when told to."""

    def __init__(self, raises: bool = False) -> None:
        super().__init__()
        self.given_back: list[tuple[object, ...]] = []
        self.raises = raises

    def refund(self, identity: str, decision: Decision, *cost: int) -> None:
        self.given_back.append((identity, decision.allowed, *cost))
        if self.raises:
            raise ConnectionError("Redis is gone")


async def served(
    rule: Rule, tmp_path: Path, limiter: GivingBack, statuses: list[int]
) -> list[Operation]:
    """The server's history after one request per status the app answers with."""
    rules = validated([rule], DEFAULT_OUTBOUND)
    journals = Journals(tmp_path, "server", "app-0")
    answers = iter(statuses)

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": next(answers), "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async def send(message: MutableMapping[str, Any]) -> None:
        pass

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b""}

    middleware = RateLimitMiddleware(app, rules, {rule.name: limiter}, journals, tag="t")
    for _ in statuses:
        await middleware(scope("/api/x", x_api_key="team-1", x_cost="2"), receive, send)
    journals.close()
    return merge_journals(journal_paths(tmp_path, "server", rule.name))


def test_a_request_the_app_failed_is_given_back_and_journalled_so(tmp_path: Path) -> None:
    rule = Rule("api", "/api/*", "fixed-window-lua", POLICY, cost="X-Cost", refund="failed")
    limiter = GivingBack()
    history = asyncio.run(served(rule, tmp_path, limiter, [200, 502, 404]))
    assert limiter.given_back == [("t:api:team-1", True, 2)] * 2  # the cost it was asked for
    ok, failed, missing = history
    assert ok.refund is None
    for given_back in (failed, missing):
        assert given_back.refund is not None
        assert given_back.complete is not None
        begun, answered = given_back.refund
        assert given_back.complete <= begun <= (answered or math.inf)
        assert answered is not None


def test_a_give_back_that_raises_is_left_unanswered(tmp_path: Path) -> None:
    rule = Rule("api", "/api/*", "fixed-window-lua", POLICY, refund="failed")
    (failed,) = asyncio.run(served(rule, tmp_path, GivingBack(raises=True), [503]))
    assert failed.refund is not None
    assert failed.refund[1] is None


def test_without_refund_nothing_is_given_back(tmp_path: Path) -> None:
    rule = Rule("api", "/api/*", "fixed-window-lua", POLICY)
    limiter = GivingBack()
    history = asyncio.run(served(rule, tmp_path, limiter, [502]))
    assert limiter.given_back == []
    assert history[0].refund is None


@pytest.mark.parametrize(
    ("limiter", "refund", "message"),
    [
        ("fixed-window-lua", "sometimes", "refund 'sometimes' is not one of never, failed"),
        ("fixed-window-incr-expire", "failed", "fixed-window-incr-expire cannot give a request"),
    ],
)
def test_a_rule_gives_back_only_what_its_limiter_can(
    limiter: str, refund: str, message: str
) -> None:
    with pytest.raises(RulesError, match=message):
        validated([Rule("api", "/api/*", limiter, POLICY, refund=refund)], DEFAULT_OUTBOUND)
