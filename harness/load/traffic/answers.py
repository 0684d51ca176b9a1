"""What the swarm's answers said, taken in by the batch.

A user sends its request and hands the answer here (``Answers.add``). What the answer
tells is recorded a batch at a time, by ``take_in``: the operation's completion in the client
journal (stamped when the answer came, not when it is taken in), the client view's count and
latency, the lies of its rate-limit headers and the promise of ``X-RateLimit-Remaining``. The
Locust process calls ``take_in`` from a greenlet every ``EVERY`` seconds, before each report
to the master, at the stop and at the quit. The same work done in one loop costs far less than
spread over the users' greenlets, each in turn (measured on a no-wait swarm: the Locust
process's CPU time a request fell by a tenth). On the request path stays only the journal's
invoke, which must reach the OS before the request is sent.

A kill loses the answers not yet taken in: their operations stay in flight (``unknown``) and
their promises unchecked, as if those answers had never come.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import NamedTuple

from ratelimit_harness.harness.history import Outcome
from ratelimit_harness.harness.load.contract.headers import UNCHECKED_HEADER
from ratelimit_harness.harness.load.contract.journals import Journals
from ratelimit_harness.harness.load.contract.rules import Rule
from ratelimit_harness.harness.load.judge.client_view import ClientView, outcome_of
from ratelimit_harness.harness.load.judge.promises import Promise, PromiseLog
from ratelimit_harness.harness.load.judge.truth import RATE_LIMIT_HEADERS, response_lies

EVERY = 0.05  # seconds between batches
PENDING_AT_MOST = 4096  # answers waiting; one more and they are taken in at once


class Answer(NamedTuple):
    rule: Rule
    token: int | None  # the operation's, in the client journal of the rule (None: no journal)
    status: int  # 0: no answer
    began: float  # when its latency counts from
    sent: float
    received: float
    identity: str
    headers: Iterable[tuple[str, str]]  # the answer's, as (name, value) pairs in any case
    request: str  # "METHOD /path"


class Answers:
    """One Locust process's answers not yet taken in, and where they go."""

    def __init__(
        self, view: ClientView, journals: Journals | None, promises: PromiseLog | None
    ) -> None:
        self.view, self.journals, self.promises = view, journals, promises
        self.pending: list[Answer] = []

    def add(self, answer: Answer) -> None:
        self.pending.append(answer)
        if len(self.pending) > PENDING_AT_MOST:
            self.take_in()

    def take_in(self) -> None:
        """Record what every pending answer said."""
        answers, self.pending = self.pending, []
        for answer in answers:
            self._take(answer)

    def _take(self, answer: Answer) -> None:
        rule, status = answer.rule.name, answer.status
        headers = rate_limit_headers(answer.headers)
        outcome = outcome_of(status, UNCHECKED in headers)
        if answer.token is not None and self.journals is not None:
            self.journals[rule].complete(answer.token, outcome, at=answer.received)
        self.view.record(rule, outcome, answer.received - answer.began if status else None)
        if outcome is Outcome.UNKNOWN:
            return
        lies, _, remaining = response_lies(headers, status)
        if 200 <= status < 300 and remaining is not None and self.promises is not None:
            promise = Promise(answer.identity, answer.sent, answer.received, remaining)
            self.promises.add(rule, promise)
        if lies:
            shown = {k: v for k, v in headers.items() if k in RATE_LIMIT_HEADERS}
            witness = f"{answer.request} -> {status} {json.dumps(shown, sort_keys=True)}"
            for lie in lies:
                self.view.lie(rule, lie, witness)


UNCHECKED = UNCHECKED_HEADER.lower()
_READ = frozenset((*RATE_LIMIT_HEADERS, UNCHECKED))


def rate_limit_headers(headers: Iterable[tuple[str, str]]) -> dict[str, str]:
    """The rate-limit headers and ``UNCHECKED`` of an answer's, by lower-case name (of a
    repeated one, the last)."""
    found: dict[str, str] = {}
    for name, value in headers:
        lower = name.lower()
        if lower in _READ:
            found[lower] = value
    return found
