from pathlib import Path

import pytest

from ratelimit_harness.harness.history.races import DECISION, SKEW
from ratelimit_harness.reports import read_load, read_race
from ratelimit_harness.reports.admissions import _counted
from ratelimit_harness.reports.policy import Allowance, allowance
from ratelimit_harness.reports.swimlane import guilty_steps

RACE_TEST = Path(__file__).parent / "fixtures" / "race-test-20261201-120839"


def test_the_violating_decisions_are_the_witness_operations() -> None:
    race = read_race(RACE_TEST / "naive-get-set-over-admission.json")
    assert guilty_steps(race) == {6, 8}  # both "-> allowed"
    assert [race.saved.steps[n - 1].reply for n in (6, 8)] == ["allowed", "allowed"]


def test_a_step_keeps_its_instance_clock_and_the_one_virtual_time(race_file: Path) -> None:
    steps = read_race(race_file).saved.steps  # app-1's clock jumps +1 ms, then 10 s pass
    assert steps[0].kind == SKEW
    assert steps[0].seconds == steps[0].offset == 0.001
    assert steps[0].clock - steps[0].at == pytest.approx(0.001, abs=1e-6)
    decisions = [s for s in steps if s.kind == DECISION]
    assert [(s.lane, s.reply) for s in decisions] == [("app-1", "allowed"), ("app-0", "rejected")]
    assert decisions[1].at - decisions[0].at == pytest.approx(10.0)


def test_the_rejection_the_witness_names_is_the_guilty_step(race_file: Path) -> None:
    assert guilty_steps(read_race(race_file)) == {8}  # app-0's rejection, 10 s after


def test_allowances() -> None:
    assert allowance("fixed-window:limit=10,window=1") == Allowance(1.0, 10.0, aligned=True)
    assert allowance("sliding-window:limit=10,window=1") == Allowance(1.0, 10.0, aligned=False)
    assert allowance("token-bucket:capacity=5,rate=2.5") == Allowance(2.0, 10.0, aligned=False)
    assert allowance("leaky-bucket:rate=10,capacity=20") == Allowance(1.0, 11.0, aligned=False)
    assert allowance("mystery:x=1") is None


def test_the_boundary_attack_counts_over_the_limit_across_an_edge(load_dir: Path) -> None:
    run = read_load(load_dir)
    admitted = sorted(
        op.complete or op.invoke
        for op in run.history("api")
        if op.outcome == "allowed" and op.key == "attacker-10"
    )
    _, trailing = _counted(admitted, admitted[0], admitted[-1], 1.0, aligned=False)
    _, aligned = _counted(admitted, admitted[0], admitted[-1], 1.0, aligned=True)
    assert max(trailing) > 10  # the sliding window the run is judged by is broken
    assert max(aligned) == 10  # the fixed window the limiter enforces is not
