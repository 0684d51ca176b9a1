"""Over-admission where a placement decides it (``placement``), judged as a stream
(``common``): the first step of ``check_placement``, earliest deadline first forwards, each
admission at the earliest instant the rule allows, run as the admissions come, in order of
invoke.

When it places every admission, the history keeps the rule, and nothing is found: as
``check_placement`` finds. When it drops one, the later steps need the whole identity (they run
backwards, and search): it gives up (``NotStreamable``). It keeps the admissions released and
not yet placed, and the rule's state (``Tracker``): O(the admissions in flight).
"""

from __future__ import annotations

import heapq
import math

from ratelimit_harness.harness.checkers.placement.rules import Rule
from ratelimit_harness.harness.checkers.placement.search import SLACK
from ratelimit_harness.harness.checkers.stream.common import NotStreamable
from ratelimit_harness.harness.history import Operation
from ratelimit_harness.harness.history.verdict import Witness


class PlacedOver:
    """``placement.greedy_drops_none`` as the admissions come: a segment at a time (a gap of the
    rule's horizon after every admission so far completed starts a new one, with a fresh
    state), each step's instant (its *slot*) the rule's earliest, or the next admission's invoke
    when none is waiting, every admission invoked by then released first."""

    def __init__(self, rule: Rule) -> None:
        self.rule = rule
        self.tracker = rule.tracker()
        self.earliest = self.tracker.earliest()
        self.pending: list[float] = []  # the deadlines (completions) of those released
        self.slot: float | None = None  # the instant of the step under way
        self.latest_end = -math.inf  # of the segment so far

    def add(self, number: int, op: Operation) -> None:
        assert op.complete is not None  # an admission completed
        start = op.invoke
        if start - self.latest_end >= self.rule.horizon + SLACK:  # a new segment
            self._place_until(math.inf)
            self.tracker = self.rule.tracker()
            self.earliest = self.tracker.earliest()
            self.slot = None
        self._place_until(start)
        heapq.heappush(self.pending, op.complete)
        self.latest_end = max(self.latest_end, op.complete)

    def _place_until(self, start: float) -> None:
        """Take the steps before the next admission, invoked at ``start``, is released."""
        while True:
            if self.slot is None:
                if self.pending:
                    self.slot = self.earliest
                elif start == math.inf:
                    return
                else:
                    self.slot = max(self.earliest, start)
            if start <= self.slot:
                return  # released at this step: it joins the others first
            deadline = heapq.heappop(self.pending)
            if deadline < self.slot - SLACK:
                raise NotStreamable("an admission may be over the rule: searched on the whole")
            self.earliest = self.tracker.place(min(self.slot, deadline))
            self.slot = None

    def finish(self) -> tuple[int, list[Witness]]:
        self._place_until(math.inf)
        return 0, []
