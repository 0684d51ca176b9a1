"""The verdict engine: a history (and what the run left in Redis) in, a verdict out.

One pure checker per policy kind; they never touch Redis and never sleep. Each decision's true
instant is only known to lie between its invoke and its complete, so a violation is reported
only when it holds for every placement of the decisions inside their intervals, and ``unknown``
outcomes get the benefit of the doubt: never counted as admissions when looking for
over-admission (but for windows started by admissions, where one may be counted to make room:
``first_window``), always counted when judging a rejection. What happens within a millisecond
of a window's edge is a convention, not a flaw (``edges``).

Parts are chosen by a policy's promise (``Policy.promise``): its kind, and ``anchor=first`` for a
fixed window started by admissions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ratelimit_harness.harness.checkers import (
    first_window,
    fixed_window,
    leaky_bucket,
    sliding_counter,
    sliding_window,
    token_bucket,
)
from ratelimit_harness.harness.checkers.metrics import describe
from ratelimit_harness.harness.checkers.parts import Evidence, Part, each_key
from ratelimit_harness.harness.checkers.placement import Findings
from ratelimit_harness.harness.checkers.state import collisions, immortal_keys
from ratelimit_harness.harness.history import Operation
from ratelimit_harness.harness.history.verdict import Verdict, Violation, Witness
from ratelimit_harness.limiters.policy import FIRST_ANCHORED, Policy, PolicyError

__all__ = ["PARTS", "Part", "Verdict", "Violation", "Witness", "check"]

WINDOWS, BUCKETS = ("fixed-window", "sliding-counter"), ("token-bucket", "gcra")

# every kind of violation, in the order a verdict lists them
PARTS: tuple[Part, ...] = (
    Part("over-admission", WINDOWS, each_key(fixed_window.over_admissions)),
    Part("over-admission", [FIRST_ANCHORED], each_key(first_window.over_admissions)),
    Part("over-admission", ["sliding-window"], each_key(sliding_window.over_admissions)),
    Part("over-admission", BUCKETS, each_key(token_bucket.over_admissions)),
    Part("over-admission", ["leaky-bucket"], each_key(leaky_bucket.over_admissions)),
    Part("wrongful-rejection", ["fixed-window"], each_key(fixed_window.wrongful_rejections)),
    Part("wrongful-rejection", [FIRST_ANCHORED], each_key(first_window.wrongful_rejections)),
    Part("wrongful-rejection", ["sliding-window"], each_key(sliding_window.wrongful_rejections)),
    Part("wrongful-rejection", ["sliding-counter"], each_key(sliding_counter.wrongful_rejections)),
    Part("wrongful-rejection", BUCKETS, each_key(token_bucket.wrongful_rejections)),
    Part("wrongful-rejection", ["leaky-bucket"], each_key(leaky_bucket.wrongful_rejections)),
    Part("immortal-key", None, lambda evidence, _: Findings(immortal_keys(evidence.ttls))),
    Part("collision", None, lambda evidence, _: Findings(collisions(evidence.history))),
)


def check(
    history: Sequence[Operation],
    policy: Policy,
    ttls: Mapping[str, float] | None = None,
    *,
    unjudged: Mapping[str, str] | None = None,
) -> Verdict:
    """Judge ``history`` against ``policy``; ``ttls`` is the run's final key snapshot
    (key -> TTL in seconds, -1 for none), when there is one: without one, no key is judged
    (the verdict does not name ``immortal-key`` as checked). ``unjudged`` names kinds the run
    cannot support, each with why: they are not judged, and the verdict says why."""
    unjudged = dict(unjudged or {})
    parts = [part for part in PARTS if part.judges(policy) and part.kind not in unjudged]
    if ttls is None:
        parts = [part for part in parts if part.kind != "immortal-key"]
    if all(part.policies is None for part in parts):
        raise PolicyError(f"no checker judges {policy.kind} policies")
    evidence = Evidence(history, ttls or {})
    checked = list(dict.fromkeys(part.kind for part in parts))
    verdict = Verdict(str(policy), len(history), checked=checked, unjudged=unjudged)
    verdict.metrics = describe(evidence.columns)
    for part in parts:
        found = part.find(evidence, policy)
        verdict.add(part.kind, found.violations)
        verdict.inconclusive += found.inconclusive
    if policy.kind == "sliding-counter":
        verdict.metrics["sliding_accuracy"] = sliding_counter.accuracy(evidence.columns, policy)
    return verdict
