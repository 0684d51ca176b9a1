"""Search schedules with Hypothesis until one breaks the policy, then shrink it.

Every schedule runs against a real Redis (flushed first) and its history goes through the
verdict engine. ``wanted`` says which verdicts count as a find (any violation, or one kind).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import redis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as fixed_seed
from hypothesis import strategies as st

from harness.checkers import Verdict, check
from harness.explorer.clocks import patched
from harness.explorer.run import Run, RunResult, Setup
from harness.explorer.schedules import Space, draw_actions


@dataclass
class Exploration:
    setup: Setup
    examples: int = 0  # schedules run in all
    examples_to_find: int = 0  # schedules run until the first find
    seconds_to_find: float = 0.0
    seconds: float = 0.0
    found: RunResult | None = None  # the shortest failing run, after shrinking
    verdict: Verdict | None = None
    first_steps: int = 0  # actions in the first failing schedule, before shrinking

    @property
    def kinds(self) -> set[str]:
        """The kinds of violation the shortest failing run shows."""
        return self.verdict.kinds if self.verdict else set()

    @property
    def trace_steps(self) -> int:
        return len(self.found.trace) if self.found else 0


class _Found(Exception):
    pass


def explore(
    setup: Setup,
    *,
    wanted: Callable[[Verdict], bool] = lambda verdict: not verdict.valid,
    space: Space | None = None,
    max_examples: int = 300,
    seed: int | None = None,
    on_example: Callable[[Exploration], None] = lambda _: None,
) -> Exploration:
    """A quarter of the budget on interleavings alone (races between round trips show up
    fastest there), the rest with the nemesis' faults too, each schedule drawing which of them
    it may use (swarm testing: a schedule without crashes has room for more time passing)."""
    space = space or Space()
    result = Exploration(setup)
    started = time.perf_counter()
    calm = Space(space.identities, (), space.max_actions)
    for stage, budget in ((calm, max_examples // 4), (space, max_examples - max_examples // 4)):
        _search(result, stage, wanted, budget, seed=seed, on_example=on_example, started=started)
        if result.found is not None:
            break
    result.seconds = time.perf_counter() - started
    return result


def _search(
    result: Exploration,
    space: Space,
    wanted: Callable[[Verdict], bool],
    max_examples: int,
    *,
    seed: int | None,
    on_example: Callable[[Exploration], None],
    started: float,
) -> None:
    setup = result.setup
    admin = redis.Redis.from_url(setup.url)

    @settings(
        max_examples=max_examples,
        database=None,
        deadline=None,
        phases=[Phase.generate, Phase.shrink],
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
        print_blob=False,
    )
    @given(st.data())
    def search(data: st.DataObject) -> None:
        allowed = [n for n in space.nemeses if data.draw(st.booleans())] if space.nemeses else []
        swarm = Space(space.identities, tuple(allowed), space.max_actions)
        run = Run(setup, admin)
        try:
            for _ in range(data.draw(st.integers(1, space.max_actions))):
                actions = draw_actions(data, run, swarm)
                if not actions:
                    break
                for action in actions:
                    run.apply(action)
        finally:
            outcome = run.finish()
        verdict = check(outcome.history, setup.judge, outcome.ttls)
        result.examples += 1
        on_example(result)
        if wanted(verdict):
            if result.found is None:
                result.examples_to_find = result.examples
                result.seconds_to_find = time.perf_counter() - started
                result.first_steps = len(outcome.actions)
            result.found, result.verdict = outcome, verdict
            raise _Found

    if seed is not None:
        search = fixed_seed(seed)(search)
    try:
        with patched():
            search()
    except _Found:
        pass
    finally:
        admin.close()
