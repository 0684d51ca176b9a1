"""The verdict engine: a history (and what the run left in Redis) in, a verdict out.

One pure checker per policy kind; they never touch Redis and never sleep. Each decision's true
instant is only known to lie between its invoke and its complete, so a violation is reported
only when it holds for every placement of the decisions inside their intervals, and ``unknown``
outcomes get the benefit of the doubt: never counted as admissions when looking for
over-admission (but for windows started by admissions, where one may be counted to make room:
``first_window``), always counted when judging a rejection. What happens within a millisecond
of a window's edge is a convention, not a flaw (``edges``).

Parts are chosen by a policy's promise (``Policy.promise``): its kind, and ``anchor=first`` for a
fixed window started by admissions, ``phase=crc32`` for aligned windows each identity shifts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ratelimit_harness.harness.checkers.compose.joined import budget_findings
from ratelimit_harness.harness.checkers.compose.refunds import StandIns
from ratelimit_harness.harness.checkers.compose.state import collisions, excess_ttls, immortal_keys
from ratelimit_harness.harness.checkers.compose.table import OVER, WRONG, Evidence, Part, each_key
from ratelimit_harness.harness.checkers.figures.metrics import describe
from ratelimit_harness.harness.checkers.placement.search import Findings
from ratelimit_harness.harness.checkers.policies import (
    first_window,
    fixed_window,
    leaky_bucket,
    sliding_counter,
    sliding_window,
    token_bucket,
)
from ratelimit_harness.harness.checkers.shared.kinds import ALIGNED, BUCKETS
from ratelimit_harness.harness.checkers.view.columns import Columns
from ratelimit_harness.harness.history import Operation
from ratelimit_harness.harness.history.verdict import Verdict, Violation, Witness
from ratelimit_harness.limiters.policy import FIRST_ANCHORED, Policy, PolicyError

__all__ = ["PARTS", "Part", "Verdict", "Violation", "Witness", "check", "judge"]

WINDOWS = (*ALIGNED, "sliding-counter")

# every kind of violation, in the order a verdict lists them
PARTS: tuple[Part, ...] = (
    Part(OVER, WINDOWS, each_key(fixed_window.over_admissions)),
    Part(OVER, [FIRST_ANCHORED], each_key(first_window.over_admissions)),
    Part(OVER, ["sliding-window"], each_key(sliding_window.over_admissions)),
    Part(OVER, BUCKETS, each_key(token_bucket.over_admissions)),
    Part(OVER, ["leaky-bucket"], each_key(leaky_bucket.over_admissions)),
    Part(WRONG, ALIGNED, each_key(fixed_window.wrongful_rejections)),
    Part(WRONG, [FIRST_ANCHORED], each_key(first_window.wrongful_rejections)),
    Part(WRONG, ["sliding-window"], each_key(sliding_window.wrongful_rejections)),
    Part(WRONG, ["sliding-counter"], each_key(sliding_counter.wrongful_rejections)),
    Part(WRONG, BUCKETS, each_key(token_bucket.wrongful_rejections)),
    Part(WRONG, ["leaky-bucket"], each_key(leaky_bucket.wrongful_rejections)),
    Part("immortal-key", None, lambda evidence, _: Findings(immortal_keys(evidence.ttls))),
    Part("excess-ttl", None, lambda evidence, policy: Findings(excess_ttls(evidence.ttls, policy))),
    Part("collision", None, lambda evidence, _: Findings(collisions(evidence.history))),
)
SNAPSHOT_KINDS = ("immortal-key", "excess-ttl")  # judged only from a final key snapshot


def check(
    history: Sequence[Operation],
    policy: Policy,
    ttls: Mapping[str, float] | None = None,
    *,
    unjudged: Mapping[str, str] | None = None,
) -> Verdict:
    """Judge ``history`` against ``policy``; ``ttls`` is the run's final key snapshot
    (key -> TTL in seconds, -1 for none), when there is one: without one, no key is judged
    (the verdict does not name ``immortal-key`` or ``excess-ttl`` as checked). ``unjudged``
    names kinds the run cannot support, each with why: they are not judged, and the verdict
    says why.

    A composite policy is judged limit by limit, and weighted requests in units (``joined``);
    requests given back as ``refunds`` says. Each kind's witnesses, and the inconclusive ones,
    are listed key by key, in the order the keys first appear (within a key, as found): so a
    history split by key and judged in parts lists them alike (``partitions``)."""
    return judge(history, policy, ttls, unjudged=unjudged)[0]


def judge(
    history: Sequence[Operation],
    policy: Policy,
    ttls: Mapping[str, float] | None = None,
    *,
    unjudged: Mapping[str, str] | None = None,
) -> tuple[Verdict, Columns]:
    """``check``, and the history as columns (as its metrics read it)."""
    unjudged = dict(unjudged or {})
    limits = policy.limits or (policy,)
    budget = [[p for p in PARTS if p.policies and p.judges(limit)] for limit in limits]
    for limit, parts in zip(limits, budget, strict=True):
        if not parts:
            raise PolicyError(f"no checker judges {limit.kind} policies")
    budget = [[p for p in parts if p.kind not in unjudged] for parts in budget]
    keyed = [p for p in PARTS if p.policies is None and p.kind not in unjudged]
    if ttls is None:
        keyed = [p for p in keyed if p.kind not in SNAPSHOT_KINDS]
    stand_ins = StandIns(history)
    evidence = Evidence(stand_ins.history, ttls or {})
    checked = [p.kind for p in PARTS if p in keyed or any(p in parts for parts in budget)]
    verdict = Verdict(str(policy), len(history), checked=list(dict.fromkeys(checked)))
    verdict.unjudged = unjudged
    columns = Columns.of(history) if stand_ins.given_back else evidence.columns
    verdict.metrics = describe(columns)
    if stand_ins.given_back:
        verdict.metrics["given_back"] = stand_ins.given_back
    found = budget_findings(evidence, limits, budget)
    first_seen = {key: place for place, key in enumerate(columns.key_names)}
    for kind in dict.fromkeys(checked):
        every = [found[kind]] if kind in found else []
        every += [part.find(evidence, policy) for part in keyed if part.kind == kind]
        witnesses = stand_ins.recorded([w for found in every for w in found.violations])
        verdict.add(kind, _key_by_key(witnesses, first_seen) if kind in found else witnesses)
        verdict.inconclusive += stand_ins.recorded([w for f in every for w in f.inconclusive])
    verdict.inconclusive = _key_by_key(verdict.inconclusive, first_seen)
    if policy.kind == "sliding-counter":
        verdict.metrics["sliding_accuracy"] = sliding_counter.accuracy(evidence.columns, policy)
    return verdict, columns


def _key_by_key(witnesses: list[Witness], first_seen: Mapping[str, int]) -> list[Witness]:
    """``witnesses`` ordered by the first appearance of their key (stable: within a key, as
    found). A key the history never names (none should) goes last."""
    last = len(first_seen)
    return sorted(witnesses, key=lambda witness: first_seen.get(witness.key, last))
