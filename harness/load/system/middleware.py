"""Part 8's application middleware, as pure ASGI: identify the caller, find the rule that holds
the request, ask its limiter, journal the decision, and answer 429 or pass the request on, with
the rate-limit headers on both.

Identity is the API key (the ``X-API-Key`` header, or the header a rule names as its
``identity``), else the client address: the first ``X-Forwarded-For``
hop when the peer is on loopback (a trusted balancer, or a load generator speaking for many
clients), else the peer itself. The limiter sees ``<tag>:<rule>:<identity>``, so each rule (and
each run) keeps its own keys; the journal records the bare identity.

A limiter is synchronous (redis-py) and is called on the event loop: an instance decides one
request at a time, so its races are with the other instances, as Part 7's are. Measured here
(wrk, one granian instance): 6.3k decisions/s this way, 1.5k/s through a thread pool (Starlette's
way for sync code), whose idle threads also hold a stopping instance for 10 s. A limiter that
raises answers 503 (a rule's ``on_error = "closed"``, the default) or lets the request through
with ``X-RateLimit-Unchecked: RULE`` and no rate-limit headers (``"open"``): either way the
request may or may not have counted, so it is journalled ``unknown``.

A rule with ``refund = "failed"`` gives back an admitted request the app answered with 400 or
more (express-rate-limit's ``skipFailedRequests``): once the app has answered, the middleware
calls the limiter's ``refund(identity, decision)`` (``refund(identity, decision, cost)`` for a
weighted request), journalled around the call (``Recorder.give_back``).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ratelimit_harness.harness.history import Outcome
from ratelimit_harness.harness.load.contract.headers import UNCHECKED_HEADER, response_headers
from ratelimit_harness.harness.load.contract.journals import Journals
from ratelimit_harness.harness.load.contract.rules import FAILED, Rule, Rules, tier_of
from ratelimit_harness.harness.loopback import loopback_address
from ratelimit_harness.limiters import Decision, Limiter
from ratelimit_harness.limiters.base import check_args, refund_args


def held_by(rules: Rules, scope: Scope) -> tuple[Rule, str] | None:
    """The rule that holds a request and the request's identity under it; None if none does."""
    headers = dict(scope.get("headers") or ())
    for rule in rules.rules:
        identity, tier = identity_of(scope, headers, rule.identity.lower().encode("latin-1"))
        if rule.matches(scope["path"], tier):
            return rule, identity
    return None


def identity_of(scope: Scope, headers: dict[bytes, bytes], header: bytes) -> tuple[str, str]:
    """(identity, tier) of a request: its API key (in ``header``, lower case), else its client
    address; the pro tier is an API key beginning ``pro-``."""
    api_key = headers.get(header)
    if api_key:
        key = api_key.decode("latin-1")
        return key, tier_of(key)
    peer = (scope.get("client") or ("unknown", 0))[0]
    forwarded = headers.get(b"x-forwarded-for")
    if forwarded and loopback_address(peer) is not None:
        return forwarded.decode("latin-1").split(",")[0].strip(), "free"
    return peer, "free"


class RateLimitMiddleware:
    def __init__(
        self,
        app: ASGIApp,
        rules: Rules,
        limiters: Mapping[str, Limiter],
        journals: Journals,
        *,
        tag: str,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.app = app
        self.rules = rules
        self.limiters = limiters
        self.journals = journals
        self.tag = tag
        self.clock = clock
        self._reported: set[str] = set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        held = held_by(self.rules, scope)
        if held is None:
            await self.app(scope, receive, send)
            return
        rule, identity = held
        headers = dict(scope.get("headers") or ())
        cost = rule.cost_of(lambda name: _header(headers, name))
        if cost is None:
            body = {"error": "bad_cost", "rule": rule.name, "message": f"{rule.cost}: 1 or more"}
            await _json(send, 400, body, [])
            return
        decision, token = self.decide(rule, identity, cost)
        if decision is None and rule.on_error == "open":
            unchecked = [(UNCHECKED_HEADER, rule.name)]
            await self.app(scope, receive, _with_headers(send, unchecked))
            return
        if decision is None:
            await _json(send, 503, {"error": "limiter_failed", "rule": rule.name}, [])
            return
        told = response_headers(rule.name, rule.parsed_policy, decision, self.clock())
        if not decision.allowed:
            await _json(send, 429, _refusal(rule, decision), told)
            return
        scope.setdefault("state", {})["identity"] = identity
        status = _Status(_with_headers(send, told))
        await self.app(scope, receive, status.send)
        if rule.refund == FAILED and status.code >= 400:
            self.give_back(rule, identity, cost, decision, token)

    def decide(self, rule: Rule, identity: str, cost: int = 1) -> tuple[Decision | None, int]:
        """The rule's decision for ``identity`` (a request of ``cost``: asked as
        ``check(identity, cost)`` when that is not 1), journalled, and its journal token; None
        when the limiter failed."""
        journal = self.journals[rule.name]
        token = journal.invoke(identity, cost)
        check = self.limiters[rule.name].check
        asked = check_args(f"{self.tag}:{rule.name}:{identity}", cost)
        try:
            decision = check(*asked)
        except Exception as error:  # a user's limiter may raise anything
            journal.complete(token, Outcome.UNKNOWN)
            self._report(rule, error)
            return None, token
        outcome = Outcome.ALLOWED if decision.allowed else Outcome.REJECTED
        journal.complete(token, outcome, decision.now)
        return decision, token

    def give_back(
        self, rule: Rule, identity: str, cost: int, decision: Decision, token: int
    ) -> None:
        """Give back the admitted request ``token``, journalled around the call. A give-back
        that raises is left begun, never answered: it may or may not have taken effect."""
        refund = getattr(self.limiters[rule.name], "refund", None)
        if not callable(refund):
            self._report(rule, TypeError("the limiter has no refund(identity, decision)"))
            return
        journal = self.journals[rule.name]
        journal.give_back(token)
        try:
            refund(*refund_args(f"{self.tag}:{rule.name}:{identity}", decision, cost))
        except Exception as error:  # a user's limiter may raise anything
            self._report(rule, error)
            return
        journal.given_back(token)

    def _report(self, rule: Rule, error: Exception) -> None:
        if rule.name not in self._reported:  # once per rule, not once per request
            self._reported.add(rule.name)
            text = f"{type(error).__name__}: {error}"
            print(f"{self.journals.process}: rule {rule.name!r}: {text}", file=sys.stderr)
            self.journals.note_error(rule.name, text)


class _Status:
    """A ``send`` that notes the status the app answered with."""

    def __init__(self, send: Send) -> None:
        self.code = 0
        self._send = send

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.code = message["status"]
        await self._send(message)


def _header(headers: dict[bytes, bytes], name: str) -> str | None:
    value = headers.get(name.lower().encode("latin-1"))
    return None if value is None else value.decode("latin-1")


def _refusal(rule: Rule, decision: Decision) -> dict[str, Any]:
    wait = decision.retry_after
    body: dict[str, Any] = {"error": "rate_limit_exceeded", "rule": rule.name}
    if wait is not None:
        body["message"] = f"Too many requests. Try again in {wait:.3g} seconds."
        body["retryAfter"] = wait
    return body


async def _json(
    send: Send, status: int, body: dict[str, Any], headers: list[tuple[str, str]]
) -> None:
    payload = json.dumps(body).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(payload))]
    raw += [(name.lower().encode(), value.encode()) for name, value in headers]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": payload})


def _with_headers(send: Send, headers: list[tuple[str, str]]) -> Send:
    extra = [(name.lower().encode(), value.encode()) for name, value in headers]

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", ()), *extra]}
        await send(message)

    return sending
