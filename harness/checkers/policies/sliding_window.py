"""sliding-window (exact): at most ``limit`` admissions in any half-open span of ``window``.

By the edge rule (``edges``), an admission within ``EDGE`` of a window's end may count outside
it: over-admission is judged by spans of a window less ``EDGE``, a rejection by the admissions
that can fall in the closed [t - window - EDGE, t] before its instant t."""

from __future__ import annotations

from ratelimit_harness.harness.checkers.placement.rules import SlidingWindow
from ratelimit_harness.harness.checkers.placement.search import Findings, check_placement
from ratelimit_harness.harness.checkers.shared.counting import Placeable
from ratelimit_harness.harness.checkers.shared.edges import EDGE, least_apart
from ratelimit_harness.harness.checkers.shared.rejections import instants, wrongful
from ratelimit_harness.harness.checkers.view.timeline import Timeline, decided_by, window_params
from ratelimit_harness.harness.history import Operation
from ratelimit_harness.harness.history.verdict import Witness
from ratelimit_harness.limiters.policy import Policy


def over_admissions(line: Timeline, policy: Policy) -> Findings:
    limit, window = window_params(policy)
    what = f"at most {limit} per {window:g} s"
    return check_placement(line, SlidingWindow(limit, least_apart(window)), what)


def wrongful_rejections(line: Timeline, policy: Policy) -> list[Witness]:
    """Wrongful: at every instant t the rejection may have happened at, fewer than ``limit``
    admissions (unknown ones counted) can lie in the window before it, [t - window - EDGE, t]
    by the edge rule (exactly: (t - window, t])."""
    limit, window = window_params(policy)
    placeable = Placeable(line)
    reach = window + EDGE

    def most_used(op: Operation) -> float:
        instants = [op.invoke, *placeable.invoked_between(op.invoke, decided_by(op))]
        return max(placeable.within(t - reach, t, before=op.invoke) for t in instants)

    first, _ = instants(line)  # most_used at each rejection's invoke, for all at once
    at_least = placeable.within_each(first - reach, first, before=first)
    unit = "admissions in the window before it"
    return wrongful(line, most_used, limit, unit, at_least=at_least)
