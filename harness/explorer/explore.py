"""Search schedules until one breaks the policy, then shrink it.

Two stages, the second only if the first found nothing: the one-preemption sweep (``sweep``),
then Hypothesis drawing interleavings, time passing, crashes and clock skews. Every
schedule runs against a real Redis (flushed first) and its history goes through the verdict
engine. ``wanted`` says which verdicts count as a find (any violation, or one kind).

A find of the sweep is the shortest of its family already. A find of Hypothesis is shrunk by
``minimize``, on the actions themselves; Hypothesis' own shrinking phase is off. Measured on
the catalogue's time-dependent flaws: with it, finding and shrinking took 2-15 s and left
traces of up to 13 lines; without it, 0.3-2.2 s, and the traces are as short or shorter.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass

import redis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as fixed_seed
from hypothesis import strategies as st

from harness.checkers import Verdict, check
from harness.explorer.actions import Action
from harness.explorer.clocks import patched
from harness.explorer.minimize import minimize
from harness.explorer.run import Run, RunResult, Setup, run_actions
from harness.explorer.schedules import Space, draw_actions, draw_offsets, draw_swarm
from harness.explorer.sweep import families


@dataclass
class Exploration:
    setup: Setup
    examples: int = 0  # schedules run in all, the sweep's included
    swept: int = 0  # schedules of the sweep
    shrink_runs: int = 0  # schedules run while shrinking the find
    examples_to_find: int = 0  # schedules run until the first find
    seconds_to_find: float = 0.0
    seconds: float = 0.0
    found: RunResult | None = None  # the shortest failing run, after shrinking
    verdict: Verdict | None = None
    first_steps: int = 0  # actions in the first failing schedule, before shrinking
    stage: str = ""  # which stage found it: sweep or search

    @property
    def kinds(self) -> set[str]:
        """The kinds of violation the shortest failing run shows."""
        return self.verdict.kinds if self.verdict else set()

    @property
    def trace_steps(self) -> int:
        return len(self.found.trace) if self.found else 0


class _Found(Exception):
    pass


@dataclass
class _Judge:
    """Judges each schedule's outcome and keeps the tally."""

    result: Exploration
    wanted: Callable[[Verdict], bool]
    on_example: Callable[[Exploration], None]
    started: float

    def __call__(self, outcome: RunResult, stage: str) -> bool:
        """Whether ``outcome`` is a find; the first find is recorded with its cost."""
        verdict = check(outcome.history, self.result.setup.judge, outcome.ttls)
        result = self.result
        result.examples += 1
        result.swept += stage == "sweep"
        self.on_example(result)
        if not self.wanted(verdict):
            return False
        if result.found is None:
            result.examples_to_find = result.examples
            result.seconds_to_find = time.perf_counter() - self.started
            result.first_steps = len(outcome.actions)
            result.stage = stage
        result.found, result.verdict = outcome, verdict
        return True


def explore(
    setup: Setup,
    *,
    wanted: Callable[[Verdict], bool] = lambda verdict: not verdict.valid,
    space: Space | None = None,
    max_examples: int = 300,
    seed: int | None = None,
    on_example: Callable[[Exploration], None] = lambda _: None,
) -> Exploration:
    """The sweep (on the first identity), then Hypothesis, each of whose schedules draws what
    it may use (``draw_swarm``): one in eight has none of the faults, for races between round
    trips that need more than one preemption."""
    space = space or Space()
    result = Exploration(setup)
    judge = _Judge(result, wanted, on_example, time.perf_counter())
    admin = redis.Redis.from_url(setup.url)
    try:
        with patched():
            if not _sweep(setup, admin, space.identities[0], judge):
                _search(admin, judge, space, max_examples=max_examples, seed=seed)
                if result.found is not None:
                    _minimize(admin, judge)
            return result
    finally:
        admin.close()
        result.seconds = time.perf_counter() - judge.started


def _sweep(setup: Setup, admin: redis.Redis, identity: str, judge: _Judge) -> bool:
    for family in families(setup.policy, identity, setup.instances):
        for preemption in family:
            run = Run(setup, admin)
            try:
                for action in preemption.head():
                    run.apply(action)
                preempted = run.busy(0)
                if preempted:
                    for action in preemption.tail():
                        run.apply(action)
            finally:
                outcome = run.finish()
            if not preempted:
                break  # instance 0's request ended before this stopping place
            if judge(outcome, "sweep"):
                return True
    return False


def _minimize(admin: redis.Redis, judge: _Judge) -> None:
    result = judge.result
    assert result.found is not None

    def attempt(actions: list[Action]) -> tuple[RunResult, Verdict]:
        result.shrink_runs += 1
        judge.on_example(result)
        return run_actions(result.setup, admin, actions)

    shorter = minimize(result.found.actions, attempt, lambda outcome: judge.wanted(outcome[1]))
    if shorter is not None:
        result.found, result.verdict = shorter


def _search(
    admin: redis.Redis,
    judge: _Judge,
    space: Space,
    *,
    max_examples: int,
    seed: int | None,
) -> None:
    setup = judge.result.setup

    @settings(
        max_examples=max_examples,
        database=None,
        deadline=None,
        phases=[Phase.generate],  # shrinking is minimize's
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
        print_blob=False,
    )
    @given(st.data())
    def search(data: st.DataObject) -> None:
        swarm = draw_swarm(data, space)
        run = Run(setup, admin)
        try:
            for offset in draw_offsets(data, run, swarm):
                run.apply(offset)
            for _ in range(data.draw(st.integers(1, space.max_actions))):
                actions = draw_actions(data, run, swarm)
                if not actions:
                    break
                for action in actions:
                    run.apply(action)
        finally:
            outcome = run.finish()
        if judge(outcome, "search"):
            raise _Found

    if seed is not None:
        search = fixed_seed(seed)(search)
    with contextlib.suppress(_Found):
        search()
