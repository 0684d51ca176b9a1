"""Token buckets, GCRA and the leaky bucket, sequentially, against a real Redis."""

import pytest
import redis

from ratelimit_harness.limiters import CATALOGUE, Policy
from tests.clocks import ManualClock, advance
from tests.limiters.helpers import admitted, key_of, make, run

pytestmark = pytest.mark.integration

TOKEN_BUCKETS = ["token-bucket-nonatomic", "token-bucket-client-clock", "token-bucket-lua"]
BURST_THEN_RATE = [*TOKEN_BUCKETS, "gcra-lua"]


def bucket_spec(name: str, capacity: float, rate: float) -> str:
    kind = "gcra" if name == "gcra-lua" else "token-bucket"
    return f"{kind}:capacity={capacity},rate={rate}"


@pytest.mark.parametrize("name", BURST_THEN_RATE)
def test_reproduces_the_chapters_worked_example(
    name: str, client: redis.Redis, clock: ManualClock
) -> None:
    """Part 5: capacity 10, 2 tokens/s. t=0: 5 requests; t=1: 8 arrive, 7 allowed; t=2: 2 left."""
    limiter = make(name, client, bucket_spec(name, 10, 2), clock)
    assert admitted(limiter, 5) == 5
    advance(clock, client, 1)
    assert [d.allowed for d in run(limiter, 8)] == [True] * 7 + [False]
    advance(clock, client, 1)
    assert admitted(limiter, 3) == 2


@pytest.mark.parametrize("name", BURST_THEN_RATE)
def test_refills_at_the_rate_and_never_above_capacity(
    name: str, client: redis.Redis, clock: ManualClock
) -> None:
    limiter = make(name, client, bucket_spec(name, 5, 2.5), clock)
    assert admitted(limiter, 6) == 5
    advance(clock, client, 0.39)
    assert admitted(limiter, 1) == 0
    advance(clock, client, 0.01)  # 0.4 s x 2.5/s = exactly one token
    assert admitted(limiter, 2) == 1
    advance(clock, client, 100)  # idle long: the bucket is full, not overfull
    assert admitted(limiter, 7) == 5


@pytest.mark.parametrize("name", ["token-bucket-lua", "gcra-lua"])
def test_lua_bucket_decisions_tell_remaining_and_retry(
    name: str, client: redis.Redis, clock: ManualClock
) -> None:
    decisions = run(make(name, client, bucket_spec(name, 3, 2), clock), 4)
    assert [d.remaining for d in decisions] == [2, 1, 0, 0]
    assert [d.allowed for d in decisions] == [True, True, True, False]
    assert decisions[-1].retry_after == pytest.approx(0.5)
    assert decisions[2].reset_at == pytest.approx(clock() + 1.5)  # full again in 3 / 2 s
    assert all(d.limit == 3 for d in decisions)


@pytest.mark.parametrize(
    ("name", "ttl_ms"),
    [
        ("token-bucket-nonatomic", 3000),
        ("token-bucket-client-clock", 3000),
        ("token-bucket-lua", 1201),
        ("gcra-lua", 1200),
    ],
)
def test_bucket_keys_expire_once_full_again(
    name: str, ttl_ms: int, client: redis.Redis, clock: ManualClock
) -> None:
    run(make(name, client, bucket_spec(name, 5, 2.5), clock), 3)
    (key,) = client.scan_iter()
    assert 0 < client.pttl(key) <= ttl_ms


def test_client_clock_bucket_refills_for_an_instance_whose_clock_runs_ahead(
    client: redis.Redis, clock: ManualClock
) -> None:
    """Part 5's Lua takes `now` from the caller: an instance 2 s ahead refills 5 tokens that
    never accrued. With server time (token-bucket-lua) the same two instances share one bucket."""
    ahead = ManualClock(clock() + 2)
    policy = Policy.parse("token-bucket:capacity=5,rate=2.5")
    for name, total in [("token-bucket-client-clock", 10), ("token-bucket-lua", 5)]:
        on_time = CATALOGUE[name].build(client, policy, clock=clock, server_clock=clock)
        skewed = CATALOGUE[name].build(client, policy, clock=ahead, server_clock=clock)
        assert admitted(on_time, 6, name) + admitted(skewed, 6, name) == total


def test_leaky_bucket_queues_up_to_capacity_and_spaces_departures(
    client: redis.Redis, clock: ManualClock
) -> None:
    limiter = make("leaky-bucket", client, "leaky-bucket:rate=10,capacity=3", clock)
    decisions = run(limiter, 5)
    assert [d.allowed for d in decisions] == [True, True, True, True, False]
    assert [d.delay for d in decisions[:4]] == pytest.approx([0, 0.1, 0.2, 0.3])
    assert [d.remaining for d in decisions] == [2, 2, 1, 0, 0]
    assert decisions[-1].retry_after == pytest.approx(0.1)  # the first waiting one leaves
    advance(clock, client, 0.1)
    assert limiter.check("user:1").delay == pytest.approx(0.3)  # departs at 0.4 s
    advance(clock, client, 10)
    assert limiter.check("user:1").delay == 0  # drained: leaves at once


def test_leaky_bucket_keeps_the_last_departure_for_one_more_interval(
    client: redis.Redis, clock: ManualClock
) -> None:
    """Otherwise an empty-looking queue would send the next call sooner than 1/rate."""
    limiter = make("leaky-bucket", client, "leaky-bucket:rate=2,capacity=3", clock)
    assert limiter.check("user:1").delay == 0
    advance(clock, client, 0.3)
    assert limiter.check("user:1").delay == pytest.approx(0.2)
    assert 0 < client.pttl(key_of(limiter)) <= 700
