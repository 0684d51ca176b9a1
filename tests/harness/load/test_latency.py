import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ratelimit_harness.harness.load.judge.client_view import ClientView
from ratelimit_harness.harness.load.judge.latency import Latencies

KEYS = ["count", "p50", "p90", "p99", "p99.9", "max"]


def recorded(values: dict[str, list[float]]) -> Latencies:
    latencies = Latencies()
    for name, seconds in values.items():
        for value in seconds:
            latencies.record(name, value)
    return latencies


def test_percentiles_of_known_values() -> None:
    summary = recorded({"api": [n / 1000 for n in range(1, 1001)]}).summary("api")  # 1..1000 ms
    assert list(summary) == KEYS
    assert summary["count"] == 1000
    expected = {"p50": 500, "p90": 900, "p99": 990, "p99.9": 999, "max": 1000}
    for key, ms in expected.items():
        assert summary[key] == pytest.approx(ms, rel=1e-3)  # 3 significant digits


def test_one_value_is_every_percentile() -> None:
    summary = recorded({"api": [0.0123]}).summary("api")
    assert summary["count"] == 1
    assert all(summary[key] == pytest.approx(12.3, rel=1e-3) for key in KEYS[1:])


def test_values_are_kept_apart_by_name() -> None:
    latencies = recorded({"fast": [0.001] * 3, "slow": [2.0]})
    assert latencies.summary("fast")["count"] == 3
    assert latencies.summary("slow")["max"] == pytest.approx(2000, rel=1e-3)


def test_no_data_is_all_zeros() -> None:
    assert Latencies().summary("api") == dict.fromkeys(KEYS, 0) | {"count": 0}


def test_values_out_of_range_are_clamped() -> None:
    summary = recorded({"api": [-1.0, 0.0, 120.0]}).summary("api")
    assert summary["count"] == 3
    assert summary["p50"] == pytest.approx(0.001)  # 1 µs
    assert summary["max"] == pytest.approx(60_000, rel=1e-3)  # 60 s


seconds = st.floats(0, 70, allow_nan=False)
by_name = st.dictionaries(st.sampled_from(["api", "login"]), st.lists(seconds, max_size=20))


@settings(max_examples=10)  # each example builds six histograms of 60 s range
@given(by_name, by_name)
def test_merging_two_encodings_equals_recording_everything_in_one(
    first: dict[str, list[float]], second: dict[str, list[float]]
) -> None:
    merged = Latencies()
    for part in (first, second):
        merged.merge(json.loads(json.dumps(recorded(part).encode())))  # as a worker sends it
    together = {name: first.get(name, []) + second.get(name, []) for name in {*first, *second}}
    alone = recorded(together)
    for name in ("api", "login"):
        assert merged.summary(name) == alone.summary(name)
        assert merged.summary(name)["count"] == len(together.get(name, []))


def test_take_returns_what_was_gathered_and_forgets_it() -> None:
    view = ClientView()
    view.record("api", "allowed", 0.002)
    view.record("api", "rejected", None)  # no answer timed
    view.lie("api", "malformed", "X-RateLimit-Limit: five")
    taken = view.take()
    assert taken["outcomes"] == {"api": {"allowed": 1, "rejected": 1}}
    assert taken["lies"] == {"api": {"malformed": 1}}
    assert taken["examples"] == {"api": {"malformed": "X-RateLimit-Limit: five"}}
    assert taken["latency_ms"]["api"]["count"] == 1
    assert set(taken["latency_hdr"]) == {"api"}
    empty = view.take()
    assert empty == ClientView().to_json()
    assert empty["outcomes"] == empty["lies"] == empty["latency_hdr"] == {}


def test_a_lie_counts_every_time_and_keeps_its_first_witness() -> None:
    view = ClientView()
    for witness in ("first", "second"):
        view.lie("api", "malformed", witness)
    assert view.to_json()["lies"] == {"api": {"malformed": 2}}
    assert view.to_json()["examples"] == {"api": {"malformed": "first"}}


def worker(rule: str, outcomes: dict[str, int], lie: str, witness: str) -> dict[str, Any]:
    view = ClientView()
    for outcome, count in outcomes.items():
        for _ in range(count):
            view.record(rule, outcome, 0.010)
    view.lie(rule, lie, witness)
    report: dict[str, Any] = json.loads(json.dumps(view.take()))  # a message between processes
    return report


def test_merge_adds_counts_and_keeps_the_first_witness() -> None:
    master = ClientView()
    master.record("api", "allowed", 0.001)
    master.merge(worker("api", {"allowed": 2, "unknown": 1}, "malformed", "from a"))
    master.merge(worker("api", {"rejected": 4}, "malformed", "from b"))
    master.merge(worker("login", {"allowed": 1}, "fields-disagree", "from c"))
    master.merge({})  # an empty report changes nothing
    seen = master.to_json()
    assert seen["outcomes"] == {
        "api": {"allowed": 3, "unknown": 1, "rejected": 4},
        "login": {"allowed": 1},
    }
    assert seen["lies"] == {"api": {"malformed": 2}, "login": {"fields-disagree": 1}}
    assert seen["examples"] == {
        "api": {"malformed": "from a"},
        "login": {"fields-disagree": "from c"},
    }
    assert seen["latency_ms"]["api"]["count"] == 8
    assert seen["latency_ms"]["api"]["max"] == pytest.approx(10, rel=1e-3)
    assert seen["latency_ms"]["login"]["count"] == 1


def test_merge_keeps_a_witness_already_held() -> None:
    master = ClientView()
    master.lie("api", "malformed", "mine")
    master.merge(worker("api", {}, "malformed", "theirs"))
    assert master.to_json()["examples"] == {"api": {"malformed": "mine"}}
    assert master.to_json()["lies"] == {"api": {"malformed": 2}}
