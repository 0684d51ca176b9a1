"""A limiter's decision as the operation a history holds (``harness.history.Operation``), for
every driver that asks a limiter and records what it said (the explorer, stress, the study)."""

from __future__ import annotations

from ratelimit_harness.harness.history import Operation, Outcome
from ratelimit_harness.limiters import Decision


def decided(
    process: str,
    identity: str,
    invoked: float,
    completed: float,
    decision: Decision,
    *,
    keys: tuple[str, ...] = (),
    cost: int = 1,
) -> Operation:
    """The operation a decision makes. A queued call (a leaky bucket's ``delay``) is recorded
    as its departure: between the instant the limiter scheduled (its ``now`` plus ``delay``)
    and ``delay`` after the answer arrived; ``now`` keeps when it was accepted."""
    outcome = Outcome.ALLOWED if decision.allowed else Outcome.REJECTED
    if decision.allowed and decision.delay:
        scheduled = (decision.now if decision.now is not None else completed) + decision.delay
        invoked, completed = sorted((scheduled, completed + decision.delay))
    return Operation(process, identity, invoked, completed, outcome, decision.now, keys, cost)
