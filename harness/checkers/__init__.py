"""The verdict engine: a history (and what the run left in Redis) in, a verdict out.

One pure checker per policy kind; they never touch Redis and never sleep. Each decision's true
instant is only known to lie between its invoke and its complete, so a violation is reported
only when it holds for every placement of the decisions inside their intervals, and ``unknown``
outcomes get the benefit of the doubt: never counted as admissions when looking for
over-admission, always counted when judging a rejection.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from harness.checkers import (
    fixed_window,
    leaky_bucket,
    sliding_counter,
    sliding_window,
    token_bucket,
)
from harness.checkers.metrics import describe
from harness.checkers.placement import Findings
from harness.checkers.state import collisions, immortal_keys
from harness.checkers.timeline import Timeline, by_key
from harness.checkers.verdict import Verdict, Violation, Witness
from harness.history import Operation
from limiters.policy import Policy

__all__ = ["Verdict", "Violation", "Witness", "check"]

OverAdmissions = Callable[[Timeline, Policy], Findings]
WrongfulRejections = Callable[[Timeline, Policy], list[Witness]]

# kind -> (over-admission check, wrongful-rejection check)
CHECKS: dict[str, tuple[OverAdmissions, WrongfulRejections]] = {
    "fixed-window": (fixed_window.over_admissions, fixed_window.wrongful_rejections),
    "sliding-window": (sliding_window.over_admissions, sliding_window.wrongful_rejections),
    "sliding-counter": (sliding_counter.over_admissions, sliding_counter.wrongful_rejections),
    "token-bucket": (token_bucket.over_admissions, token_bucket.wrongful_rejections),
    "gcra": (token_bucket.over_admissions, token_bucket.wrongful_rejections),
    "leaky-bucket": (leaky_bucket.over_admissions, leaky_bucket.wrongful_rejections),
}


def check(
    history: Sequence[Operation], policy: Policy, ttls: Mapping[str, float] | None = None
) -> Verdict:
    """Judge ``history`` against ``policy``; ``ttls`` is the run's final key snapshot
    (key -> TTL in seconds, -1 for none), when there is one."""
    over, wrongful = CHECKS[policy.kind]
    verdict = Verdict(str(policy), len(history), metrics=describe(history))
    excess: list[Witness] = []
    refused: list[Witness] = []
    for line in by_key(history):
        found = over(line, policy)
        excess += found.violations
        verdict.inconclusive += found.inconclusive
        refused += wrongful(line, policy)
    verdict.add("over-admission", excess)
    verdict.add("wrongful-rejection", refused)
    verdict.add("immortal-key", immortal_keys(ttls or {}))
    verdict.add("collision", collisions(history))
    if policy.kind == "sliding-counter":
        verdict.metrics["sliding_accuracy"] = sliding_counter.accuracy(history, policy)
    return verdict
