"""race-test: every catalogue limiter explored, each verdict held against the catalogue.

For a broken limiter, one search per expected flaw, each stopping at its first find and
shrinking it; for a correct one, one search for any violation, which must find none. Plus the
boundary attack: fixed-window-lua judged by the sliding window of the same limit.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from ratelimit_harness.harness.checkers import Verdict
from ratelimit_harness.harness.explorer.search.drawing import GIVE_BACKS, Space
from ratelimit_harness.harness.explorer.search.explore import Exploration
from ratelimit_harness.harness.explorer.spec import RaceSpec, any_violation
from ratelimit_harness.harness.explorer.stress import stress
from ratelimit_harness.harness.explorer.trace import load, replay, save
from ratelimit_harness.harness.history.races import RaceTestRow, Search
from ratelimit_harness.limiters import CATALOGUE, Policy
from ratelimit_harness.limiters.catalogue import Entry
from ratelimit_harness.limiters.js_catalogue import PROGRAMS
from ratelimit_harness.limiters.program import EXEC

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


@dataclass(frozen=True)
class Target:
    label: str
    limiter: str
    policy: str
    expected: tuple[str, ...]
    judged_by: str | None = None
    costs: tuple[int, ...] = (1,)  # what a request may cost (catalogue.Entry.costs)
    give_backs: tuple[bool, ...] = (False,)  # which admitted requests are given back


def entry_race_policy(entry: Entry) -> str:
    """The policy a catalogue entry is raced under: its own race policy, else its kind's."""
    return entry.race or race_policy(entry.policy)


def race_policy(entry_policy: str) -> str:
    """The race policy of a catalogue entry's kind, with the entry's options (its anchor,
    phase and what it counts)."""
    policy = Policy.parse(entry_policy)
    raced = Policy.parse(RACE_POLICIES[policy.kind])
    return str(replace(raced, anchor=policy.anchor, phase=policy.phase, count=policy.count))


def targets(*, js: bool = False) -> list[Target]:
    """Every catalogue limiter and the boundary attack; with ``js``, the chapter's JavaScript
    programs too (``js_targets``)."""
    rows = [
        Target(
            name,
            name,
            entry_race_policy(entry),
            tuple(str(f) for f in entry.flaws),
            costs=entry.costs,
            give_backs=GIVE_BACKS if entry.gives_back else (False,),
        )
        for name, entry in CATALOGUE.items()
    ]
    boundary = "boundary attack"
    fixed = RACE_POLICIES["fixed-window"]
    rows.append(Target(boundary, "fixed-window-lua", fixed, ("over-admission",), BOUNDARY_JUDGE))
    return rows + (js_targets() if js else [])


def js_targets() -> list[Target]:
    """The chapter's JavaScript programs (``limiters.js_catalogue``), each raced as an
    ``exec:`` limiter under its kind's race policy, each expected to show its flaws."""
    return [
        Target(
            f"{program.name}.js",
            EXEC + shlex.join(program.command()),
            race_policy(program.policy),
            tuple(str(flaw) for flaw in program.needs),
        )
        for program in PROGRAMS
    ]


def weight(target: Target) -> int:
    """A row's cost, roughly, to start the costliest rows first when rows share the cores: one
    search per expected flaw (one for a correct limiter), a program's about a third more than
    an in-process limiter's (measured: its process and proxy make each schedule slower)."""
    return (4 if target.limiter.startswith(EXEC) else 3) * (1 + len(target.expected))


def _stem(target: Target) -> str:
    """The start of a row's trace files' names: its limiter's name, or a program's label."""
    return target.label if target.limiter.startswith(EXEC) else target.limiter


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
) -> RaceTestRow:
    judge = target.judged_by or target.policy
    row = RaceTestRow(target.label, target.limiter, target.policy, judge, list(target.expected))
    judged_by = Policy.parse(target.judged_by) if target.judged_by else None
    # a search for an expected flaw stops at its find: it may go on longer when the flaw is
    # hard to reach, at no cost when it is not; a correct limiter gets the plain budget
    budget = max_examples * (FLAW_BUDGET if target.expected else 1)
    space = Space(costs=target.costs, give_backs=target.give_backs)
    asked = RaceSpec(
        target.limiter, Policy.parse(target.policy), judged_by, space, instances, budget, seed
    )
    setup = asked.on(url, flush=flush, clock_file=clock_file, count_unseen=count_unseen)
    searches = [shows(kind) for kind in target.expected] or [any_violation]
    started = time.perf_counter()
    for wanted in searches:
        found = asked.search(setup, wanted, on_example=on_example)
        row.examples += found.examples
        row.covered = found.covered
        row.unconfirmed += found.unconfirmed_count
        row.void += found.void
        row.unseen += found.unseen
        if found.found is None or found.verdict is None:
            continue
        path = out_dir / f"{_stem(target)}-{'-'.join(sorted(found.kinds))}.json"
        save(path, setup, found.found, found.verdict)
        row.searches.append(
            Search(
                found=sorted(found.kinds),
                found_by=found.stage,
                needs=found.fault_labels,
                examples_to_find=found.examples_to_find,
                seconds_to_find=round(found.seconds_to_find, 3),
                seconds_with_shrinking=round(found.seconds, 3),
                actions_before_shrinking=found.first_steps,
                actions_after_shrinking=len(found.found.actions),
                trace_steps=found.trace_steps,
                trace=path.name,
            )
        )
        row.found_flaws = sorted(set(row.found_flaws) | found.kinds)
        # the saved trace must break it again
        _, again = replay(load(path), url, flush=flush, clock_file=clock_file)
        if not found.kinds & again.kinds:
            row.replays_that_failed.append(path.name)
    row.seconds = round(time.perf_counter() - started, 3)
    if stress_seconds > 0:
        verdict = stress(setup, stress_seconds)
        row.stress_seconds, row.stress_found = stress_seconds, sorted(verdict.kinds)
    return row


def shows(kind: str) -> Callable[[Verdict], bool]:
    """A search's aim: a verdict with a violation of this kind."""

    def wanted(verdict: Verdict) -> bool:
        return kind in verdict.kinds

    return wanted
