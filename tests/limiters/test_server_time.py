"""The correct limiters read the server's TIME when no server clock is injected."""

import time

import pytest
import redis

from ratelimit_harness.limiters import CATALOGUE, Policy
from tests.clocks import ManualClock

pytestmark = pytest.mark.integration

# long windows and slow rates: nothing refills during the test
SPECS = {
    "fixed-window-lua": "fixed-window:limit=3,window=3600",
    "sliding-log-lua": "sliding-window:limit=3,window=3600",
    "sliding-counter-lua": "sliding-counter:limit=3,window=3600",
    "token-bucket-lua": "token-bucket:capacity=3,rate=0.001",
    "gcra-lua": "gcra:capacity=3,rate=0.001",
    "leaky-bucket": "leaky-bucket:rate=0.001,capacity=2",  # one leaves at once, two wait
}


@pytest.mark.parametrize("name", SPECS)
def test_uses_server_time_not_the_instance_clock(name: str, client: redis.Redis) -> None:
    wrong_instance_clock = ManualClock(0.0)
    limiter = CATALOGUE[name].build(client, Policy.parse(SPECS[name]), clock=wrong_instance_clock)
    before = time.time()
    decisions = [limiter.check("user:1") for _ in range(4)]
    assert [d.allowed for d in decisions] == [True, True, True, False]
    for decision in decisions:
        assert decision.now is not None
        assert before - 1 <= decision.now <= time.time() + 1
