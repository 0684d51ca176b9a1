"""Running a fixed schedule, for tests."""

from __future__ import annotations

from collections.abc import Sequence

import redis

from harness.checkers import Verdict, check
from harness.explorer.actions import Action, Step
from harness.explorer.clocks import patched
from harness.explorer.run import Run, RunResult, Setup
from limiters import Policy


def run(
    url: str, limiter: str, spec: str, actions: Sequence[Action], instances: int = 2
) -> tuple[RunResult, Verdict]:
    setup = Setup(limiter, Policy.parse(spec), instances, url)
    admin = redis.Redis.from_url(url)
    try:
        with patched():
            scheduled = Run(setup, admin)
            for action in actions:
                scheduled.apply(action)
            result = scheduled.finish()
    finally:
        admin.close()
    return result, check(result.history, setup.judge, result.ttls)


def kinds(verdict: Verdict) -> set[str]:
    return {v.kind for v in verdict.violations if v.count}


def steps(*instances: int, identity: str = "user:1") -> list[Action]:
    return [Step(n, identity) for n in instances]
