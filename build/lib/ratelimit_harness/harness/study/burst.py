"""What a sudden burst gets through each limiter: ``n`` requests at one instant from an
identity that was idle, and the boundary attack of Part 2: ``n`` a second before a window edge
and ``n`` a second after it (the chapter's 12:00:59 and 12:01:01). Every limiter allows the
same budget (``subjects.LIMIT`` per ``subjects.WINDOW``); time is the virtual server clock.

A leaky bucket admits into its queue: ``at_once`` counts what may leave at once, ``longest_wait``
how long the last admitted request waits before it leaves."""

from __future__ import annotations

from typing import Any

from ratelimit_harness.harness.progress import Progress
from ratelimit_harness.harness.study.judged import Histories
from ratelimit_harness.harness.study.space import Space
from ratelimit_harness.harness.study.subjects import SUBJECTS, WINDOW
from ratelimit_harness.limiters import Decision

START = 1_800_000_000.0  # a window edge
EDGE_GAP = 1.0  # seconds either side of the edge


def bursts(space: Space, n: int, kept: Histories) -> dict[str, Any]:
    """Each limiter's bursts; its decisions, and the keys they left, go into ``kept``
    (``bursts/LIMITER``)."""
    rows = {}
    edge = START + WINDOW
    with Progress("bursts", len(SUBJECTS) * 3 * n) as bar:
        for subject in SUBJECTS:
            policy = subject.policy()
            history = kept.of("bursts", subject.limiter, policy)
            build = space.on_clock(subject.limiter, policy)
            single = history.at_instants(build, [START + WINDOW / 2] * n, "burst")
            before = history.at_instants(build, [edge - EDGE_GAP] * n, "edge")
            after = history.at_instants(build, [edge + EDGE_GAP] * n, "edge")
            history.keys_left(space, ["burst", "edge"])
            bar.advance(3 * n)
            rows[subject.limiter] = {
                "policy": str(policy),
                "burst": _admitted(single),
                "edge_before": _admitted(before),
                "edge_after": _admitted(after),
                "edge_total": _admitted(before + after)["admitted"],
            }
    return {"requests": n, "edge_gap_seconds": EDGE_GAP, "limiters": rows}


def _admitted(decisions: list[Decision]) -> dict[str, Any]:
    admitted = [d for d in decisions if d.allowed]
    return {
        "admitted": len(admitted),
        "at_once": sum(d.delay == 0 for d in admitted),
        "longest_wait": max((d.delay for d in admitted), default=0.0),
    }
