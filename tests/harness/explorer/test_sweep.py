"""The one-preemption sweep: read-then-write races in a handful of schedules, none on a script."""

import pytest

from ratelimit_harness.harness.explorer.actions import Action, Advance, Crash, Skew, Step, Through
from ratelimit_harness.harness.explorer.explore import explore
from ratelimit_harness.harness.explorer.sweep import MAX_STEPS, Preemption, families, warm_ups
from ratelimit_harness.harness.provision import RedisServer
from ratelimit_harness.limiters import Policy
from tests.harness.explorer.schedules import setup


def test_warm_ups_are_a_fresh_key_and_a_key_one_admission_short_of_the_budget() -> None:
    assert warm_ups(Policy.parse("fixed-window:limit=1,window=10")) == [0]
    assert warm_ups(Policy.parse("token-bucket:capacity=5,rate=1")) == [0, 4]
    assert warm_ups(Policy.parse("leaky-bucket:rate=1,capacity=3")) == [0, 2]


def test_a_preemption_stops_instance_0_lets_instance_1_through_then_finishes_0() -> None:
    preemption = Preemption("user:1", warm=1, steps=2)
    assert preemption.head() == [Through(0, "user:1"), Step(0, "user:1"), Step(0, "user:1")]
    assert preemption.tail() == [Through(1, "user:1"), Through(0, "user:1")]


def test_or_instance_0_crashes_where_it_stopped() -> None:
    preemption = Preemption("user:1", warm=0, steps=2, crash=True)
    assert preemption.head() == [Step(0, "user:1"), Step(0, "user:1")]
    assert preemption.tail() == [Crash(0)]


def test_each_family_tries_every_stopping_place_in_order() -> None:
    policy = Policy.parse("sliding-window:limit=3,window=10")
    found = list(families(policy, "user:1"))
    assert [{p.warm for p in family} for family in found] == [{0}, {2}]
    places = [(steps, crash) for steps in range(1, MAX_STEPS + 1) for crash in (False, True)]
    assert all([(p.steps, p.crash) for p in family] == places for family in found)
    alone = list(families(policy, "user:1", instances=1))  # no one to get in between
    assert all([(p.steps, p.crash) for p in family] == places[1::2] for family in alone)


FIXED, SLIDING = "fixed-window:limit=1,window=10", "sliding-window:limit=1,window=10"
COUNTER, BUCKET = "sliding-counter:limit=1,window=10", "token-bucket:capacity=1,rate=0.1"
SWEEP_FINDS = [
    # read, then write: instance 1 gets in between
    ("naive-get-set", FIXED, "over-admission"),
    ("colleague", FIXED, "over-admission"),
    ("sliding-counter-mget-incr", COUNTER, "over-admission"),
    ("token-bucket-nonatomic", BUCKET, "over-admission"),
    ("naive-get-set", "fixed-window:limit=3,window=10", "over-admission"),  # warm-up to 2
    # write, then its EXPIRE: instance 0 crashes in between
    ("fixed-window-incr-expire", FIXED, "immortal-key"),
    ("sliding-log-pipeline", SLIDING, "immortal-key"),
    ("sliding-counter-mget-incr", COUNTER, "immortal-key"),
    ("token-bucket-nonatomic", BUCKET, "immortal-key"),
]
ENDINGS: dict[str, list[Action]] = {
    "over-admission": [Through(1, "user:1"), Through(0, "user:1")],
    "immortal-key": [Crash(0)],
}


@pytest.mark.integration
@pytest.mark.parametrize(("limiter", "spec", "flaw"), SWEEP_FINDS)
def test_the_sweep_finds_each_race_of_one_preemption_in_a_few_schedules(
    redis_server: RedisServer, limiter: str, spec: str, flaw: str
) -> None:
    broken = setup(redis_server.url, limiter, spec)
    found = explore(broken, wanted=lambda v: flaw in v.kinds, max_examples=50)
    assert found.stage == "sweep"
    assert found.examples_to_find <= 8
    assert found.found is not None
    ending = ENDINGS[flaw]
    assert found.found.actions[-len(ending) :] == ending


@pytest.mark.integration
def test_a_flaw_that_needs_a_fault_is_left_to_the_search(redis_server: RedisServer) -> None:
    client_clock = setup(redis_server.url, "token-bucket-client-clock", BUCKET)
    found = explore(
        client_clock, wanted=lambda v: "over-admission" in v.kinds, max_examples=600, seed=1
    )
    assert found.stage == "search"
    assert found.found is not None
    # the instance's clock is off, or it read it and then waited: either way time must pass
    assert any(isinstance(action, Advance | Skew) for action in found.found.actions)
