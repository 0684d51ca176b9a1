"""Running a fixed schedule, for tests."""

from __future__ import annotations

from collections.abc import Sequence

from ratelimit_harness.harness.checkers import Verdict
from ratelimit_harness.harness.explorer.schedule.actions import Action, Step
from ratelimit_harness.harness.explorer.schedule.run import RunResult, Setup, run_schedule
from ratelimit_harness.limiters import Policy


def setup(url: str, limiter: str, spec: str, instances: int = 2) -> Setup:
    return Setup(limiter, Policy.parse(spec), instances, url)


def run(
    url: str, limiter: str, spec: str, actions: Sequence[Action], instances: int = 2
) -> tuple[RunResult, Verdict]:
    return run_schedule(setup(url, limiter, spec, instances), actions)


def steps(*instances: int, identity: str = "user:1") -> list[Action]:
    return [Step(n, identity) for n in instances]
