"""Model-based tests: each correct limiter and its policy's reference model driven side by
side by Hypothesis' stateful testing, under a manual clock, on a real Redis. Rules make
requests and move time; after each request both must have decided alike. Time moves in
multiples of 1/64 s and rates are powers of two, so neither side rounds."""

from __future__ import annotations

import pytest
import redis
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule

from ratelimit_harness.limiters import CATALOGUE, Policy
from ratelimit_harness.limiters.reference import Reference
from tests.clocks import ManualClock, advance

pytestmark = pytest.mark.integration

SPECS = {
    "fixed-window-lua": "fixed-window:limit=3,window=1",
    "fixed-window-first-lua": "fixed-window:limit=3,window=1,anchor=first",
    "sliding-log-lua": "sliding-window:limit=3,window=1",
    "sliding-counter-lua": "sliding-counter:limit=4,window=1",
    "token-bucket-lua": "token-bucket:capacity=3,rate=4",
    "gcra-lua": "gcra:capacity=3,rate=4",
    "leaky-bucket": "leaky-bucket:rate=4,capacity=2",
}


class LimiterAgainstModel(RuleBasedStateMachine):
    client: redis.Redis
    name: str

    @initialize()
    def start(self) -> None:
        self.client.flushall()
        self.clock = ManualClock(1024.0)
        policy = Policy.parse(SPECS[self.name])
        self.limiter = CATALOGUE[self.name].build(
            self.client, policy, clock=self.clock, server_clock=self.clock
        )
        self.model = Reference(policy, clock=self.clock)

    @rule(identity=st.sampled_from(["alice", "bob"]))
    def request(self, identity: str) -> None:
        got, expected = self.limiter.check(identity), self.model.check(identity)
        assert (got.allowed, got.delay) == (expected.allowed, expected.delay)

    @rule(sixty_fourths=st.integers(1, 96))
    def time_passes(self, sixty_fourths: int) -> None:
        advance(self.clock, self.client, sixty_fourths / 64)


@pytest.mark.parametrize("name", SPECS)
def test_limiter_and_model_decide_alike(name: str, client: redis.Redis) -> None:
    machine: type[LimiterAgainstModel] = type(
        f"{name}Machine", (LimiterAgainstModel,), {"client": client, "name": name}
    )
    machine.TestCase.settings = settings(
        max_examples=25,
        stateful_step_count=30,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
    machine.TestCase().runTest()
