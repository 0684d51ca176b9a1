"""How many admissions a policy allows one identity from ``first`` to ``last`` (seconds): the
most a correct limiter could have admitted over that span, to set an admitted count beside.

Fixed windows (and the sliding counter's aligned windows) allow ``limit`` in each window the
span touches; windows started by admissions (``anchor=first``) ``limit`` for each window that can
start within a window before the span or in it, a window apart: ceil(span / window) + 1 of
them; a sliding window ``limit`` for each whole window in it, and one more (a closed span of
one window holds a full window at each end); a bucket
``capacity + rate x span``; the leaky bucket's departures ``1 + rate x span``. A composite
allows what its tightest limit does over the span.

``per_span`` says the same for a chart: at most so many in any span of one length.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ratelimit_harness.limiters.policy import Policy


@dataclass(frozen=True)
class Allowance:
    """At most ``most`` admissions in ``span`` seconds; ``aligned`` when the spans are the
    aligned windows (a fixed window), else any span of that length."""

    span: float
    most: float
    aligned: bool


def per_span(policy: Policy) -> Allowance | None:
    """Windows allow their limit per window; buckets ``capacity + rate x d`` in a span d (d = 1
    s, or the time to refill the capacity when that is longer); the leaky bucket's departures
    ``1 + rate x d``. None for windows started by admissions (``anchor=first``), which no span
    of fixed length bounds but as aligned ones. A composite is drawn against its first limit,
    as it is written."""
    if policy.limits:
        return per_span(policy.limits[0])
    if policy.anchor == "first":
        return None
    if policy.limit is not None and policy.window is not None:
        return Allowance(policy.window, policy.limit, aligned=policy.kind != "sliding-window")
    if policy.capacity is not None and policy.rate:
        burst = 1 if policy.kind == "leaky-bucket" else policy.capacity
        span = max(1.0, burst / policy.rate)
        return Allowance(span, burst + policy.rate * span, aligned=False)
    return None


def allowance(policy: Policy, first: float, last: float) -> float:
    if policy.limits:
        return min(allowance(limit, first, last) for limit in policy.limits)
    span = max(0.0, last - first)
    if policy.limit is not None and policy.window is not None:
        if policy.kind == "sliding-window":
            return float(policy.limit * (math.floor(span / policy.window) + 1))
        if policy.anchor == "first":
            return float(policy.limit * (math.ceil(span / policy.window) + 1))
        windows = math.floor(last / policy.window) - math.floor(first / policy.window) + 1
        return float(policy.limit * max(1, windows))
    if policy.capacity is not None and policy.rate is not None:
        burst = 1 if policy.kind == "leaky-bucket" else policy.capacity
        return burst + policy.rate * span
    raise ValueError(f"policy {policy} has neither limit and window nor capacity and rate")
