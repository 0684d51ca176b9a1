from pathlib import Path

from reports import read_load, read_trace
from reports.admissions import _counted
from reports.policy import Allowance, allowance
from reports.swimlane import _global_times, _guilty

RACE_TEST = Path(__file__).parent / "fixtures" / "race-test-20261201-032304"


def test_the_violating_decisions_are_the_witness_operations() -> None:
    trace = read_trace(RACE_TEST / "naive-get-set-over-admission.json")
    steps = trace.steps
    assert _guilty(trace, steps, _global_times(steps)) == {6, 8}  # both "-> allowed"


def test_decisions_are_placed_on_the_one_virtual_clock(race_file: Path) -> None:
    trace = read_trace(race_file)  # app-1's clock jumps -10 s, then 10 s pass
    steps = trace.steps
    times = _global_times(steps)
    assert steps[-1].t == 1800000000.0
    assert times[-1] == 1800000010.0
    assert _guilty(trace, steps, times) == {9}  # the rejection at 10 s, as the witness says


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
