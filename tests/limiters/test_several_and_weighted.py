"""The catalogue's limiters for weighted requests and for several limits at once, sequentially,
against a real Redis."""

import pytest
import redis

from ratelimit_harness.limiters import PolicyError
from ratelimit_harness.limiters.script_limiter import ScriptLimiter
from tests.clocks import ManualClock, advance
from tests.limiters.helpers import admitted, make

pytestmark = pytest.mark.integration

BUCKET = "token-bucket:capacity=3,rate=1"
PER_SECOND_AND_FIVE = "fixed-window:limit=2,window=1 + fixed-window:limit=3,window=5"
TURNING_INSIDE = "fixed-window:limit=1,window=2 + fixed-window:limit=1,window=3"


def weighted(
    name: str, client: redis.Redis, clock: ManualClock, spec: str = BUCKET
) -> ScriptLimiter:
    """A catalogue limiter that takes ``check(identity, cost)``."""
    limiter = make(name, client, spec, clock)
    assert isinstance(limiter, ScriptLimiter)
    return limiter


def test_a_weighted_bucket_takes_a_requests_cost(client: redis.Redis, clock: ManualClock) -> None:
    limiter = weighted("token-bucket-weighted-lua", client, clock)
    assert limiter.check("user:1", 2).allowed
    assert not limiter.check("user:1", 2).allowed  # 1 left
    assert limiter.check("user:1").allowed  # the refusal took nothing
    assert not limiter.check("user:1", 4).allowed  # more than the bucket ever holds
    advance(clock, client, 3)
    assert limiter.check("user:1", 3).allowed


def test_the_draining_twin_empties_the_bucket_on_a_refusal(
    client: redis.Redis, clock: ManualClock
) -> None:
    limiter = weighted("token-bucket-weighted-drain", client, clock)
    assert limiter.check("user:1", 2).allowed
    assert not limiter.check("user:1", 2).allowed
    assert not limiter.check("user:1").allowed  # a token was left: refused all the same


def test_a_limiter_that_takes_no_cost_says_so(client: redis.Redis, clock: ManualClock) -> None:
    limiter = weighted("token-bucket-lua", client, clock)
    with pytest.raises(ValueError, match="takes no cost"):
        limiter.check("user:1", 2)


def test_several_windows_admit_only_while_every_one_has_room(
    client: redis.Redis, clock: ManualClock
) -> None:
    limiter = make("fixed-windows-lua", client, PER_SECOND_AND_FIVE, clock)
    assert admitted(limiter, 3) == 2  # the second's limit
    advance(clock, client, 1)
    assert admitted(limiter, 3) == 1  # the five seconds' limit: 3 in all
    advance(clock, client, 4)
    assert admitted(limiter, 3) == 2  # both windows turned


@pytest.mark.parametrize(
    ("name", "after_the_turn"), [("fixed-windows-lua", 1), ("fixed-windows-two-trips", 0)]
)
def test_the_two_trip_twin_counts_a_refused_request_in_the_first_window(
    name: str, after_the_turn: int, client: redis.Redis, clock: ManualClock
) -> None:
    # 1 per 2 s and 1 per 3 s: at 3 s the second window turns inside the first's [2, 4)
    limiter = make(name, client, TURNING_INSIDE, clock)
    assert admitted(limiter, 1) == 1
    advance(clock, client, 2)
    assert admitted(limiter, 1) == 0  # the second window is full; the twin counted it in the first
    advance(clock, client, 1)
    assert admitted(limiter, 1) == after_the_turn  # both have room: the twin refuses


@pytest.mark.parametrize("name", ["fixed-windows-lua", "fixed-windows-two-trips"])
def test_several_windows_take_only_fixed_windows(
    name: str, client: redis.Redis, clock: ManualClock
) -> None:
    with pytest.raises(PolicyError, match="fixed-window \\+ fixed-window"):
        make(name, client, "fixed-window:limit=2,window=1 + gcra:capacity=1,rate=1", clock)
