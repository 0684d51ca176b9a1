import pytest

from ratelimit_harness.harness.study.burst import bursts
from ratelimit_harness.harness.study.cost import command_name, measure
from ratelimit_harness.harness.study.judged import Histories
from ratelimit_harness.harness.study.space import Space
from ratelimit_harness.harness.study.subjects import LIMIT


def test_the_fixed_window_lets_twice_its_limit_through_at_an_edge(space: Space) -> None:
    found = bursts(space, 150, Histories())["limiters"]
    assert found["fixed-window-lua"]["edge_total"] == 2 * LIMIT
    assert found["sliding-log-lua"]["edge_total"] == LIMIT
    assert all(row["burst"]["admitted"] <= LIMIT + 1 for row in found.values())
    leaky = found["leaky-bucket"]["burst"]
    assert leaky["at_once"] == 1 < leaky["admitted"]


def test_cost_counts_the_commands_each_script_runs(space: Space) -> None:
    found = measure(space, 40, Histories())["limiters"]
    fixed = found["fixed-window-lua"]
    admitted = fixed["admitted"]["commands"]
    # one identity in one window: its first admission writes the hash and its TTL, the others
    # count themselves (a window that ends mid-phase adds one more of the first kind)
    assert admitted.keys() == {"evalsha", "time", "hmget", "hset", "pexpire", "hincrby"}
    assert admitted["evalsha"] == admitted["time"] == admitted["hmget"] == 1.0
    assert admitted["hset"] == admitted["pexpire"] <= 2 / 40
    assert admitted["hset"] + admitted["hincrby"] == pytest.approx(1.0)
    assert fixed["refused"]["commands"] == {"evalsha": 1.0, "hmget": 1.0, "time": 1.0}
    assert fixed["admitted"]["admitted"] == 40
    assert fixed["refused"]["admitted"] == 0
    for phases in found.values():
        for phase in phases.values():
            assert phase["round_trips"] == 1.0
            assert phase["commands_sent"] == 1.0
            assert phase["server_usec"] > 0


def test_commands_are_named_as_commandstats_names_them() -> None:
    assert command_name((b"EVALSHA", b"abc", 1)) == "evalsha"
    assert command_name(("SCRIPT", "LOAD", "return 1")) == "script|load"
