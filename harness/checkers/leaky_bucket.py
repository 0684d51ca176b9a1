"""leaky-bucket (outbound): departures never exceed the rate, the queue never overfills.

In a leaky-bucket history an allowed operation's [invoke, complete] is its departure, the call
to the downstream service; its ``now`` is when the limiter accepted it into the queue. Departures
are held to at most 1 + rate * d in any span d (a bucket of one). The queue at t holds those
accepted by t that have not departed: certainly over capacity when more than ``capacity`` were
accepted by t and only invoke their call after t. A rejection is wrongful when, at each instant
it may have happened at, fewer than ``capacity`` can have been waiting (an unknown operation
without a ``now`` counted as waiting from its invoke on).
"""

from __future__ import annotations

from bisect import bisect_right

from harness.checkers import token_bucket
from harness.checkers.placement import SLACK, Findings
from harness.checkers.rejections import wrongful
from harness.checkers.timeline import Timeline, bucket_params, end
from harness.checkers.verdict import Witness
from harness.history import Operation, Outcome
from limiters.policy import Policy


def over_admissions(line: Timeline, policy: Policy) -> Findings:
    capacity, rate = bucket_params(policy)
    departures = Policy("token-bucket", capacity=1, rate=rate)
    findings = token_bucket.over_admissions(line, departures)
    queued = [op for op in line.admitted if op.now is not None]
    accepted = sorted(op.now for op in queued if op.now is not None)
    departing = sorted(op.invoke for op in queued)
    # waiting at t: accepted by t, not invoking its call before t; peaks at acceptances
    most, at = max(
        ((bisect_right(accepted, t) - bisect_right(departing, t), t) for t in accepted),
        default=(0, 0.0),
    )
    if most > capacity:
        waiting = [op for op in queued if op.now is not None and op.now <= at < op.invoke]
        detail = f"{most} accepted and not yet departed at {at:.6f}; the queue holds {capacity}"
        findings.violations.append(Witness(line.key, (at, at), waiting, detail, most - capacity))
    return findings


def wrongful_rejections(line: Timeline, policy: Policy) -> list[Witness]:
    capacity, _ = bucket_params(policy)
    # an unknown operation that never said when it was accepted may have been accepted as soon
    # as it was invoked, and may never have left: it waits from its invoke on, as it hurts most
    queued = [op for op in line.maybe if op.now is not None or op.outcome is Outcome.UNKNOWN]
    accepted = sorted(op.invoke if op.now is None else op.now for op in queued)
    departures = sorted(end(op) for op in queued)

    def most_used(op: Operation) -> float:
        done = op.complete or op.invoke
        later = accepted[bisect_right(accepted, op.invoke) : bisect_right(accepted, done)]
        # accepted by t and not departed by t; a limiter's ``now`` rounded to the microsecond
        # may read a hair after the history's clock: that noise excuses, never accuses
        return max(
            bisect_right(accepted, t + SLACK) - bisect_right(departures, t)
            for t in [op.invoke, *later]
        )

    return wrongful(line, most_used, capacity, "places in the queue")
