"""Over-admission and wrongful rejection judged limit by limit, and joined into one finding each.

A composite policy is judged one limit at a time: an over-admission of any limit is one of the
whole, and a rejection is wrongful only if every limit had room for it (every placement leaves
room in each limit exactly when every placement leaves room in all). Weighted requests are
judged in units (``units``); where a limit counts attempts, rejected requests are units too; a
limit's block excuses the rejections within it (``block``; a composite's more loosely, as its
refusals may be another limit's). A key found with no over-admission, whose limits or whose
requests' units were each placed on their own, must also have one placement with every request
at one instant that keeps every limit, or it is inconclusive. Each key is judged on its own: what
another key holds never changes its verdict (so a history split by key is judged alike).
"""

from __future__ import annotations

from collections.abc import Sequence

from ratelimit_harness.harness.checkers.compose.table import OVER, WRONG, Evidence, Part
from ratelimit_harness.harness.checkers.placement.search import Findings
from ratelimit_harness.harness.checkers.policies import first_window
from ratelimit_harness.harness.checkers.policies.block import unblocked
from ratelimit_harness.harness.checkers.shared.units import (
    as_units,
    distinct,
    single_instants,
    spread,
)
from ratelimit_harness.harness.history import Operation, Outcome
from ratelimit_harness.harness.history.verdict import Witness
from ratelimit_harness.limiters.policy import FIRST_ANCHORED, Policy


def budget_findings(
    evidence: Evidence, limits: Sequence[Policy], budget: list[list[Part]]
) -> dict[str, Findings]:
    """Over-admission and wrongful rejection, each limit's parts run on the history's units
    (``evidence`` itself, when every request costs 1)."""
    history = evidence.history
    costs = bool((evidence.columns.cost != 1).any())  # some request costs more than 1
    units = Evidence(as_units(history), {}) if costs else evidence
    attempts: list[Evidence] = []  # where a limit counts attempts, rejections are units too

    def counted(limit: Policy) -> Evidence:
        if limit.count != "attempts" or not costs:
            return units
        if not attempts:
            attempts.append(Evidence(as_units(history, attempts=True), {}))
        return attempts[0]

    def judged(part: Part, limit: Policy) -> Findings:
        found = part.find(counted(limit), limit)
        if part.kind == WRONG and limit.block:
            found = unblocked(found, history, limit.block, alone=len(limits) == 1)
        return _named(found, limit, composite=len(limits) > 1, units=costs)

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
    if over is not None and (len(limits) > 1 or costs):
        over.inconclusive += _unproven(
            _placed_apart(history, over, composite=len(limits) > 1), limits, budget
        )
    return found


def _placed_apart(
    history: Sequence[Operation], over: Findings, *, composite: bool
) -> list[Operation]:
    """The requests of the keys whose limits, or units, were placed each on their own: every
    key of a composite, the keys with a request of more than one unit otherwise; but those
    found over-admitted (each key is judged on its own: what another key holds never
    changes its verdict)."""
    over_admitted = {witness.key for witness in over.violations}
    weighed = None if composite else {op.key for op in history if op.cost != 1}
    return [
        op
        for op in history
        if op.key not in over_admitted and (weighed is None or op.key in weighed)
    ]


def _named(findings: Findings, limit: Policy, *, composite: bool, units: bool) -> Findings:
    """Each witness with its operations listed once (where they were given as ``units``), and,
    in a composite, the limit it is of."""
    if not composite and not units:
        return findings

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
    history is then valid); else one inconclusive witness per key no such placement keeps."""
    if not spread(history):
        return []
    keys: set[str] | None = None
    for pinned in single_instants(history):
        units = Evidence(as_units(pinned), {})
        failing = set().union(
            *(
                _failing(pinned, units, limit, parts)
                for limit, parts in zip(limits, budget, strict=True)
            )
        )
        if not failing:
            return []
        keys = failing if keys is None else keys & failing
    detail = (
        "no over-admission when each unit, or each limit, may take its own instant, but no "
        "placement found with each request at one instant for every limit"
    )
    return [Witness(key, (0.0, 0.0), [], detail) for key in sorted(keys or ())]


def _failing(
    pinned: Sequence[Operation], units: Evidence, limit: Policy, parts: list[Part]
) -> set[str]:
    """The keys whose requests, each at the one instant ``pinned`` gives it (``units``: their
    units), ``limit`` may not hold. Windows started by admissions are replayed (their search
    may split a request's units across an edge); the other checks keep units of one instant
    together."""
    if limit.promise == FIRST_ANCHORED:
        by_key: dict[str, list[Operation]] = {}
        for op in pinned:
            if op.outcome is Outcome.ALLOWED:
                by_key.setdefault(op.key, []).append(op)
        return {key for key, ops in by_key.items() if not first_window.kept_at_instants(ops, limit)}
    over = [part.find(units, limit) for part in parts if part.kind == OVER]
    return {w.key for found in over for w in found.violations + found.inconclusive}
