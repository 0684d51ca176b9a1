"""Any limiter of this package, or any ``module:attr`` factory, as a program on the line protocol
(``limiters.program``):

    python -m ratelimit_harness.limiters.line_program NAME

reads ``REDIS_URL`` and ``RATELIMIT_POLICY``, builds ``NAME`` on a redis-py client as the load
half's app does, and answers each identity on stdin (``identity cost`` for a request that costs
more than 1: asked as ``check(identity, cost)``) with its decision, a JSON object of the fields
the limiter told, until end of input. A give-back line, ``refund IDENTITY COST``, gives back
that identity's last admission (``refund(identity, decision)``) and answers ``ok``. So the same
limiter can be raced in-process (its name) and as an OS process behind the explorer's proxy
(``exec:python -m ratelimit_harness.limiters.line_program NAME``), and the two verdicts
compared. A check that raises answers ``{"error": ...}`` (no decision) and says so on stderr.
Bad input (no such limiter, a missing variable, a policy it cannot enforce): one line on
stderr, exit code 2.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import redis

from ratelimit_harness.limiters import PluginError, PolicyError, UnknownLimiter, resolve
from ratelimit_harness.limiters.base import check_args, refund_args
from ratelimit_harness.limiters.decision import Decision
from ratelimit_harness.limiters.policy import Policy
from ratelimit_harness.limiters.program import FIELDS, GIVEN_BACK


def answer_line(decision: Decision) -> str:
    """One answer of the line protocol: ``allowed`` and each field the limiter told."""
    told: dict[str, Any] = {"allowed": decision.allowed}
    told |= {
        name: getattr(decision, name) for name in FIELDS if getattr(decision, name) is not None
    }
    return json.dumps(told)


def request(line: str) -> tuple[str] | tuple[str, int]:
    """The arguments of ``check`` that one line of input asks for: ``identity``, or
    ``identity cost``."""
    identity, _, cost = line.strip().rpartition(" ")
    if identity and cost.isdigit() and int(cost) > 1:
        return check_args(identity, int(cost))
    return check_args(line.strip())


def answered(limiter: Any, line: str, admitted: dict[str, Decision]) -> str:
    """The answer to one line: a request's decision, or ``ok`` once a give-back is made."""
    words = line.split()
    if len(words) == 3 and words[0] == "refund":  # a request has two words at most
        identity, cost = words[1], int(words[2])
        limiter.refund(*refund_args(identity, admitted.pop(identity), cost))
        return GIVEN_BACK
    asked = request(line)
    decision = limiter.check(*asked)
    if decision.allowed:
        admitted[asked[0]] = decision
    return answer_line(decision)


def main(argv: list[str]) -> int:
    name = f"line_program[{os.environ.get('RATELIMIT_INSTANCE', '-')}]"
    try:
        if len(argv) != 1:
            raise ValueError("usage: python -m ratelimit_harness.limiters.line_program LIMITER")
        url, spec = os.environ.get("REDIS_URL"), os.environ.get("RATELIMIT_POLICY")
        if not url or not spec:
            raise ValueError("REDIS_URL and RATELIMIT_POLICY must be set")
        limiter = resolve(argv[0])(redis.Redis.from_url(url), Policy.parse(spec))
    except (ValueError, PolicyError, PluginError, UnknownLimiter) as error:
        print(f"{name}: {error}", file=sys.stderr)
        return 2
    admitted: dict[str, Decision] = {}  # each identity's last admission, to give back
    for line in sys.stdin:
        try:
            answer = answered(limiter, line, admitted)
        except Exception as error:  # a limiter may raise anything: that check decided nothing
            print(f"{name}: {type(error).__name__}: {error}", file=sys.stderr, flush=True)
            answer = json.dumps({"error": f"{type(error).__name__}: {error}"})
        print(answer, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
