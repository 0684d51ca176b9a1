"""Violation kinds as parts, as Jepsen composes checkers: each kind a row of one table (its name
in the verdict, the policy kinds it judges, the function that finds it), so that adding a kind
is a module and a row, never an edit of ``check()``.

A part's ``find(evidence, policy)`` returns its witnesses (and the spans it could not decide);
most judge one key at a time, through ``each_key``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

from ratelimit_harness.harness.checkers.placement.search import Findings
from ratelimit_harness.harness.checkers.view.columns import Columns
from ratelimit_harness.harness.checkers.view.timeline import Timeline, by_key
from ratelimit_harness.harness.history import Operation
from ratelimit_harness.harness.history.verdict import Witness
from ratelimit_harness.limiters.policy import Policy


@dataclass(frozen=True)
class Evidence:
    """What a run left to judge: its history, and its final key snapshot (key -> TTL in
    seconds, -1 for none; empty when there is none)."""

    history: Sequence[Operation]
    ttls: Mapping[str, float]

    @cached_property
    def columns(self) -> Columns:
        """The history as arrays (built once, for every part)."""
        return Columns.of(self.history)

    @cached_property
    def timelines(self) -> list[Timeline]:
        """The history by key, in the order keys first appear (split once, for every part)."""
        return list(by_key(self.columns))

    @cached_property
    def attempt_timelines(self) -> list[Timeline]:
        """``timelines`` for a policy that counts attempts (``Timeline``)."""
        return list(by_key(self.columns, attempts=True))


Find = Callable[[Evidence, Policy], Findings]
OVER, WRONG = "over-admission", "wrongful-rejection"  # the kinds each limit's budget is judged by


@dataclass(frozen=True)
class Part:
    kind: str  # the violation's name in the verdict JSON
    policies: Collection[str] | None  # the promises it judges (``Policy.promise``); None: all
    find: Find

    def judges(self, policy: Policy) -> bool:
        return self.policies is None or policy.promise in self.policies


def each_key(check: Callable[[Timeline, Policy], Findings | list[Witness]]) -> Find:
    """A part from a check of one key's operations, run on every key in turn."""

    def find(evidence: Evidence, policy: Policy) -> Findings:
        findings = Findings()
        lines = evidence.attempt_timelines if policy.count == "attempts" else evidence.timelines
        for line in lines:
            found = check(line, policy)
            if isinstance(found, Findings):
                findings.violations += found.violations
                findings.inconclusive += found.inconclusive
            else:
                findings.violations += found
        return findings

    return find
