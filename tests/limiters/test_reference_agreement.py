"""Each correct limiter decides exactly as the reference model of its policy, request by
request, against a real Redis. Time moves in steps of 1/64 s and rates are powers of two, so
both sides compute without rounding and any disagreement is a real difference."""

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from limiters import CATALOGUE, Policy
from limiters.reference import Reference
from tests.clocks import ManualClock, advance

pytestmark = pytest.mark.integration

SPECS = {
    "fixed-window-lua": "fixed-window:limit=3,window=1",
    "sliding-log-lua": "sliding-window:limit=3,window=1",
    "sliding-counter-lua": "sliding-counter:limit=4,window=1",
    "token-bucket-lua": "token-bucket:capacity=3,rate=4",
    "gcra-lua": "gcra:capacity=3,rate=4",
    "leaky-bucket": "leaky-bucket:rate=4,capacity=2",
}
STEP = 1 / 64
requests = st.lists(st.tuples(st.integers(0, 48), st.sampled_from(["alice", "bob"])), max_size=40)


@pytest.mark.parametrize("name", SPECS)
def test_decides_as_the_reference_model(name: str, client: redis.Redis) -> None:
    policy = Policy.parse(SPECS[name])

    @settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(requests)
    def run(steps: list[tuple[int, str]]) -> None:
        client.flushall()
        clock = ManualClock(1024.0)
        limiter = CATALOGUE[name].build(client, policy, clock=clock, server_clock=clock)
        model = Reference(policy, clock=clock)
        for step, identity in steps:
            advance(clock, client, step * STEP)
            got, expected = limiter.check(identity), model.check(identity)
            assert (got.allowed, got.delay) == (expected.allowed, expected.delay), clock()

    run()
