"""Violation kinds are parts: a row of ``PARTS`` is all a new kind needs."""

from __future__ import annotations

import pytest

from ratelimit_harness.harness.checkers import PARTS, Part, check
from ratelimit_harness.harness.checkers.compose.table import Evidence
from ratelimit_harness.harness.checkers.placement.search import Findings
from ratelimit_harness.harness.history.verdict import Verdict, Witness
from ratelimit_harness.limiters.policy import KINDS, Policy
from tests.harness.checkers.factory import points

POLICY = Policy.parse("fixed-window:limit=1,window=1")


@pytest.mark.parametrize("kind", KINDS)
def test_every_policy_kind_is_judged_for_both_promises(kind: str) -> None:
    judged = {part.kind for part in PARTS if part.policies and kind in part.policies}
    assert judged == {"over-admission", "wrongful-rejection"}


def test_a_new_part_is_a_new_row(monkeypatch: pytest.MonkeyPatch) -> None:
    def slow_keys(evidence: Evidence, policy: Policy) -> Findings:
        found = [op for op in evidence.history if op.invoke > 1.5]
        return Findings([Witness(op.key, (op.invoke, op.invoke), [op], "late") for op in found])

    late = Part("late", ["fixed-window"], slow_keys)
    monkeypatch.setattr("ratelimit_harness.harness.checkers.PARTS", (*PARTS, late))
    verdict = check(points(1.0, 2.0), POLICY)
    assert [v["kind"] for v in verdict.to_json()["violations"]] == ["late"]
    assert check(points(1.0, 2.0), Policy.parse("gcra:capacity=1,rate=1")).valid


def test_two_parts_of_one_kind_make_one_violation(monkeypatch: pytest.MonkeyPatch) -> None:
    def every(evidence: Evidence, policy: Policy) -> Findings:
        return Findings([Witness(op.key, (0.0, 0.0), [op], "x") for op in evidence.history])

    extra = Part("over-admission", None, every)
    monkeypatch.setattr("ratelimit_harness.harness.checkers.PARTS", (*PARTS, extra))
    verdict = check(points(1.25, 1.5), POLICY)  # one real over-admission, and two more
    assert [(v.kind, v.count) for v in verdict.violations] == [("over-admission", 3)]


def test_a_kind_the_run_cannot_support_is_not_judged_and_the_verdict_says_why() -> None:
    rejected = points(1.0, outcome="rejected")  # wrongful: nothing was admitted before it
    why = {"wrongful-rejection": "its keys were there before"}
    verdict = check(rejected, POLICY, unjudged=why)
    assert verdict.valid
    assert "wrongful-rejection" not in verdict.checked
    assert "over-admission" in verdict.checked
    assert verdict.unjudged == why
    assert Verdict.from_json(verdict.to_json()).unjudged == why
    assert "unjudged" not in check(rejected, POLICY).to_json()  # absent when all were judged
    assert not check(rejected, POLICY).valid
