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

from ratelimit_harness.harness.checkers import (
    first_window,
    fixed_window,
    leaky_bucket,
    sliding_counter,
    sliding_window,
    token_bucket,
)
from ratelimit_harness.harness.checkers.block import unblocked
from ratelimit_harness.harness.checkers.metrics import describe
from ratelimit_harness.harness.checkers.parts import Evidence, Part, each_key
from ratelimit_harness.harness.checkers.placement import Findings
from ratelimit_harness.harness.checkers.state import collisions, excess_ttls, immortal_keys
from ratelimit_harness.harness.checkers.units import (
    as_units,
    distinct,
    single_instants,
    spread,
    weighted,
)
from ratelimit_harness.harness.history import Operation, Outcome
from ratelimit_harness.harness.history.verdict import Verdict, Violation, Witness
from ratelimit_harness.limiters.policy import FIRST_ANCHORED, Policy, PolicyError

__all__ = ["PARTS", "Part", "Verdict", "Violation", "Witness", "check"]

ALIGNED = ("fixed-window", "fixed-window:phase=crc32")  # each identity's own windows, or not
WINDOWS, BUCKETS = (*ALIGNED, "sliding-counter"), ("token-bucket", "gcra")
OVER, WRONG = "over-admission", "wrongful-rejection"

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

    A composite policy is judged limit by limit: an over-admission of any limit is one of the
    whole, and a rejection is wrongful only if every limit had room for it. Weighted requests
    are judged in units (``units``)."""
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
    evidence = Evidence(history, ttls or {})
    checked = [p.kind for p in PARTS if p in keyed or any(p in parts for parts in budget)]
    verdict = Verdict(str(policy), len(history), checked=list(dict.fromkeys(checked)))
    verdict.unjudged = unjudged
    verdict.metrics = describe(evidence.columns)
    found = _budget_findings(history, limits, budget)
    for kind in dict.fromkeys(checked):
        every = [found[kind]] if kind in found else []
        every += [part.find(evidence, policy) for part in keyed if part.kind == kind]
        verdict.add(kind, [w for findings in every for w in findings.violations])
        verdict.inconclusive += [w for findings in every for w in findings.inconclusive]
    if policy.kind == "sliding-counter":
        verdict.metrics["sliding_accuracy"] = sliding_counter.accuracy(evidence.columns, policy)
    return verdict


def _budget_findings(
    history: Sequence[Operation], limits: Sequence[Policy], budget: list[list[Part]]
) -> dict[str, Findings]:
    """Over-admission and wrongful rejection, each limit's parts run on the history's units."""
    units = Evidence(as_units(history), {}) if weighted(history) else Evidence(history, {})
    attempts = Evidence(as_units(history, attempts=True), {}) if weighted(history) else units

    def judged(part: Part, limit: Policy) -> Findings:
        found = part.find(attempts if limit.count == "attempts" else units, limit)
        if part.kind == WRONG and limit.block:
            found = unblocked(found, history, limit.block)
        return _named(found, limit, len(limits) > 1)

    each = [
        {part.kind: judged(part, limit) for part in parts}
        for limit, parts in zip(limits, budget, strict=True)
    ]
    found: dict[str, Findings] = {}
    for kind in dict.fromkeys(kind for of_limit in each for kind in of_limit):
        if kind == WRONG:  # wrongful only if every limit had room
            if all(WRONG in of_limit for of_limit in each):
                found[WRONG] = Findings(_wrongful_under_all([of[WRONG].violations for of in each]))
            continue
        of_kind = [of_limit[kind] for of_limit in each if kind in of_limit]  # any limit's
        found[kind] = Findings(
            [w for findings in of_kind for w in findings.violations],
            [w for findings in of_kind for w in findings.inconclusive],
        )
    over = found.get(OVER)
    if over is not None and not over.violations and (len(limits) > 1 or weighted(history)):
        over.inconclusive += _unproven(history, limits, budget)
    return found


def _named(findings: Findings, limit: Policy, composite: bool) -> Findings:
    """Each witness with its operations listed once, and, in a composite, the limit it is of."""

    def named(witness: Witness) -> Witness:
        detail = f"under {limit}: {witness.detail}" if composite else witness.detail
        operations = distinct(witness.operations)
        return Witness(witness.key, witness.span, operations, detail, witness.excess)

    return Findings(list(map(named, findings.violations)), list(map(named, findings.inconclusive)))


def _wrongful_under_all(by_limit: list[list[Witness]]) -> list[Witness]:
    """The rejections every limit accuses, each with every limit's reason."""
    if len(by_limit) == 1:
        return by_limit[0]
    reasons: dict[int, list[Witness]] = {}  # by the rejection (each limit judged the same one)
    for witnesses in by_limit:
        for witness in witnesses:
            reasons.setdefault(id(witness.operations[0]), []).append(witness)
    return [
        Witness(ws[0].key, ws[0].span, ws[0].operations, "; ".join(w.detail for w in ws))
        for ws in reasons.values()
        if len(ws) == len(by_limit)
    ]


def _unproven(
    history: Sequence[Operation], limits: Sequence[Policy], budget: list[list[Part]]
) -> list[Witness]:
    """Nothing when some placement with each request at one instant keeps every limit (the
    history is then valid); else one inconclusive witness per key."""
    if not spread(history):
        return []
    keys: set[str] | None = None
    for pinned in single_instants(history):
        failing = set().union(
            *(_failing(pinned, limit, parts) for limit, parts in zip(limits, budget, strict=True))
        )
        if not failing:
            return []
        keys = failing if keys is None else keys & failing
    detail = (
        "no over-admission when each unit, or each limit, may take its own instant, but no "
        "placement found with each request at one instant for every limit"
    )
    return [Witness(key, (0.0, 0.0), [], detail) for key in sorted(keys or ())]


def _failing(pinned: Sequence[Operation], limit: Policy, parts: list[Part]) -> set[str]:
    """The keys whose requests, each at the one instant ``pinned`` gives it, ``limit`` may not
    hold. Windows started by admissions are replayed (their search may split a request's units
    across an edge); the other checks keep units of one instant together."""
    if limit.promise == FIRST_ANCHORED:
        by_key: dict[str, list[Operation]] = {}
        for op in pinned:
            if op.outcome is Outcome.ALLOWED:
                by_key.setdefault(op.key, []).append(op)
        return {key for key, ops in by_key.items() if not first_window.kept_at_instants(ops, limit)}
    units = Evidence(as_units(pinned), {})
    over = [part.find(units, limit) for part in parts if part.kind == OVER]
    return {w.key for found in over for w in found.violations + found.inconclusive}
