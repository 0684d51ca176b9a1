"""race-test: every catalogue limiter explored, each verdict held against the catalogue.

For a broken limiter, one search per expected flaw, each stopping at its first find and
shrinking it; for a correct one, one search for any violation, which must find none. Plus the
boundary attack: fixed-window-lua judged by the sliding window of the same limit.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.checkers import Verdict
from harness.explorer.explore import Exploration
from harness.explorer.schedules import Space
from harness.explorer.spec import RaceSpec, any_violation
from harness.explorer.stress import stress
from harness.explorer.trace import load, replay, save
from limiters import CATALOGUE, Policy

# small budgets make races reachable in few steps; windows long enough to see them
RACE_POLICIES = {
    "fixed-window": "fixed-window:limit=1,window=10",
    "sliding-window": "sliding-window:limit=1,window=10",
    "sliding-counter": "sliding-counter:limit=1,window=10",
    "token-bucket": "token-bucket:capacity=1,rate=0.1",
    "gcra": "gcra:capacity=1,rate=0.1",
    "leaky-bucket": "leaky-bucket:rate=0.1,capacity=1",
}
BOUNDARY_JUDGE = "sliding-window:limit=1,window=10"
# schedules per search: quick for development, thorough for CI
PROFILES = {"quick": 300, "thorough": 1000}
# times the profile's schedules, for a search that expects a flaw: it stops at its find, so a
# larger budget costs only when the find is late. Measured over 5 to 12 seeds per flaw, the
# latest find (a sliding counter's wrongful rejection under clock skew) came after 431
# schedules, against 3000 here.
FLAW_BUDGET = 10


@dataclass
class Row:
    name: str
    policy: str
    expected_flaws: tuple[str, ...]
    found_flaws: set[str] = field(default_factory=set)
    how: set[str] = field(default_factory=set)
    faults: dict[str, list[str]] = field(default_factory=dict)  # per flaw: the faults it needs
    examples: int = 0
    seconds: float = 0.0
    trace_steps: int = 0  # the longest of the shortest traces, one per flaw found
    traces: list[str] = field(default_factory=list)
    searches: list[dict[str, Any]] = field(default_factory=list)  # per flaw: how fast, how short
    stress_found: set[str] = field(default_factory=set)  # what naive stress found, for contrast
    replays_fail: list[str] = field(default_factory=list)  # saved traces that did not reproduce
    unconfirmed: int = 0  # finds that did not show again when re-run (not counted)
    void: int = 0  # schedules not judged: real time reached them
    # commands Redis ran for clients the explorer cannot see (see unseen): none, for a verdict
    unseen: int = 0

    @property
    def matches(self) -> bool:
        expected = self.found_flaws == set(self.expected_flaws)
        return expected and not self.replays_fail and not self.unseen

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "policy": self.policy,
            "expected_flaws": sorted(self.expected_flaws),
            "found_flaws": sorted(self.found_flaws),
            "matches": self.matches,
            "how": sorted(self.how),
            "faults": self.faults,
            "examples": self.examples,
            "seconds": round(self.seconds, 3),
            "trace_steps": self.trace_steps,
            "traces": self.traces,
            "searches": self.searches,
            "stress_found_flaws": sorted(self.stress_found),
            "replays_that_failed": self.replays_fail,
            "unconfirmed": self.unconfirmed,
            "void": self.void,
            "unscheduled": self.unseen,
        }


@dataclass(frozen=True)
class Target:
    label: str
    limiter: str
    policy: str
    expected: tuple[str, ...]
    judged_by: str | None = None


def race_policy(entry_policy: str) -> str:
    """The race policy of a catalogue entry's kind, with the entry's options (its anchor)."""
    policy = Policy.parse(entry_policy)
    raced = Policy.parse(RACE_POLICIES[policy.kind])
    return str(replace(raced, anchor=policy.anchor))


def targets() -> list[Target]:
    rows = [
        Target(name, name, race_policy(entry.policy), tuple(str(f) for f in entry.flaws))
        for name, entry in CATALOGUE.items()
    ]
    boundary = "fixed-window-lua (boundary attack)"
    fixed = RACE_POLICIES["fixed-window"]
    rows.append(Target(boundary, "fixed-window-lua", fixed, ("over-admission",), BOUNDARY_JUDGE))
    return rows


def run_row(
    target: Target,
    *,
    stress_seconds: float,
    url: str,
    clock_file: str = "",
    flush: bool = True,
    instances: int,
    max_examples: int,
    seed: int | None,
    out_dir: Path,
    on_example: Callable[[Exploration], None],
    count_unseen: bool = False,
) -> Row:
    row = Row(target.label, target.judged_by or target.policy, target.expected)
    judged_by = Policy.parse(target.judged_by) if target.judged_by else None
    # a search for an expected flaw stops at its find: it may go on longer when the flaw is
    # hard to reach, at no cost when it is not; a correct limiter gets the plain budget
    budget = max_examples * (FLAW_BUDGET if target.expected else 1)
    asked = RaceSpec(
        target.limiter, Policy.parse(target.policy), judged_by, Space(), instances, budget, seed
    )
    setup = asked.on(url, flush=flush, clock_file=clock_file, count_unseen=count_unseen)
    searches = [shows(kind) for kind in target.expected] or [any_violation]
    started = time.perf_counter()
    for wanted in searches:
        found = asked.search(setup, wanted, on_example=on_example)
        row.examples += found.examples
        row.unconfirmed += found.unconfirmed_count
        row.void += found.void
        row.unseen += found.unseen
        if found.found is None or found.verdict is None:
            continue
        how = set(found.fault_labels)
        for kind in sorted(found.kinds):
            row.faults.setdefault(kind, found.fault_labels)
        row.searches.append(
            {
                "found": sorted(found.kinds),
                "found_by": found.stage,
                "how": sorted(how),
                "examples_to_find": found.examples_to_find,
                "seconds_to_find": round(found.seconds_to_find, 3),
                "seconds_with_shrinking": round(found.seconds, 3),
                "actions_before_shrinking": found.first_steps,
                "actions_after_shrinking": len(found.found.actions),
            }
        )
        row.found_flaws |= found.kinds
        row.how |= how
        row.trace_steps = max(row.trace_steps, found.trace_steps)
        path = out_dir / f"{target.limiter}-{'-'.join(sorted(found.kinds))}.json"
        save(path, setup, found.found, found.verdict)
        row.traces.append(os.fspath(path))
        # the saved trace must break it again
        _, again = replay(load(path), url, flush=flush, clock_file=clock_file)
        if not found.kinds & again.kinds:
            row.replays_fail.append(os.fspath(path))
    row.seconds = time.perf_counter() - started
    if stress_seconds > 0:
        verdict = stress(setup, stress_seconds)
        row.stress_found = verdict.kinds
    return row


def shows(kind: str) -> Callable[[Verdict], bool]:
    """A search's aim: a verdict with a violation of this kind."""

    def wanted(verdict: Verdict) -> bool:
        return kind in verdict.kinds

    return wanted
