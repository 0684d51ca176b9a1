"""Sliding window log and sliding window counter, sequentially, against a real Redis."""

import pytest
import redis

from tests.clocks import ManualClock, advance
from tests.limiters.helpers import admitted, key_of, make, run

pytestmark = pytest.mark.integration

SLIDING = "sliding-window:limit=5,window=2"
LOGS = ["sliding-log-pipeline", "sliding-log-lua"]
COUNTERS = ["sliding-counter-mget-incr", "sliding-counter-lua"]


@pytest.mark.parametrize("name", LOGS)
def test_log_admits_limit_in_any_window_length(
    name: str, client: redis.Redis, clock: ManualClock
) -> None:
    limiter = make(name, client, SLIDING, clock)
    advance(clock, client, 1.9)  # near an aligned boundary: no boundary attack on a log
    assert admitted(limiter, 5) == 5
    advance(clock, client, 0.2)
    assert admitted(limiter, 5) == 0


def test_lua_log_frees_a_slot_exactly_one_window_after_the_admission(
    client: redis.Redis, clock: ManualClock
) -> None:
    limiter = make("sliding-log-lua", client, SLIDING, clock)
    for _ in range(5):
        assert limiter.check("user:1").allowed
        advance(clock, client, 0.25)
    refused = limiter.check("user:1")  # at 1.25 s, five in (-0.75, 1.25]
    assert not refused.allowed
    assert refused.retry_after == pytest.approx(0.75)
    advance(clock, client, 0.75)  # the first admission is exactly one window old: out
    assert [d.allowed for d in run(limiter, 2)] == [True, False]
    assert client.zcard(key_of(limiter)) == 5
    assert 0 < client.pttl(key_of(limiter)) <= 2000


def test_pipeline_log_locks_out_a_client_that_keeps_asking(
    client: redis.Redis, clock: ManualClock
) -> None:
    """Part 3's undo removes a member that was never added: every refusal stays in the log."""
    pipeline = make("sliding-log-pipeline", client, SLIDING, clock)
    lua = make("sliding-log-lua", client, SLIDING, clock)
    assert admitted(pipeline, 5, "piped") == 5
    assert admitted(lua, 5, "atomic") == 5
    pipeline_admitted = lua_admitted = 0
    for _ in range(16):  # 4 s, asking every 0.25 s: 8 asks per window, over the limit of 5
        advance(clock, client, 0.25)
        pipeline_admitted += pipeline.check("piped").allowed
        lua_admitted += lua.check("atomic").allowed
    assert pipeline_admitted == 0
    assert lua_admitted == 6  # at 2, 2.25, 2.5, 2.75, 3 and 4 s
    assert client.zcard(key_of(pipeline, "piped")) == 8  # the refusals of the last window


@pytest.mark.parametrize("name", COUNTERS)
def test_counter_reproduces_the_chapters_worked_example(
    name: str, client: redis.Redis, clock: ManualClock
) -> None:
    """Part 4: 80 in the previous minute, 30 so far, 45 s in: 30 + 80 x 0.25 = 50."""
    limiter = make(name, client, "sliding-counter:limit=100,window=60", clock)
    advance(clock, client, 10)
    assert admitted(limiter, 80) == 80
    advance(clock, client, 60)  # 10 s into the next minute
    assert admitted(limiter, 30) == 30
    advance(clock, client, 35)  # 45 s in
    decision = limiter.check("user:1")  # estimate 50 before this one
    assert decision.allowed
    assert decision.remaining == 49
    # 31 counted now; admitted while 31 + n + 20 < 100: n = 0..48, so 49 more
    assert admitted(limiter, 60) == 49


@pytest.mark.parametrize("name", COUNTERS)
def test_counter_forgets_a_window_two_windows_old(
    name: str, client: redis.Redis, clock: ManualClock
) -> None:
    limiter = make(name, client, "sliding-counter:limit=5,window=2", clock)
    assert admitted(limiter, 6) == 5
    advance(clock, client, 1)  # previous count still weighs (5 x 1... same window)
    assert admitted(limiter, 1) == 0
    advance(clock, client, 2)  # at 3 s: estimate = 0 + 5 x 0.5 = 2.5
    assert admitted(limiter, 6) == 3
    advance(clock, client, 2)  # at 5 s: window 2; window 1 holds 3, weight 0.5 -> 1.5
    assert admitted(limiter, 6) == 4
    advance(clock, client, 4)  # at 9 s: window 4; nothing in window 3
    assert admitted(limiter, 6) == 5


def test_lua_counter_keeps_its_key_for_two_windows(client: redis.Redis, clock: ManualClock) -> None:
    advance(clock, client, 0.5)
    limiter = make("sliding-counter-lua", client, "sliding-counter:limit=5,window=2", clock)
    limiter.check("u")
    assert 3000 < client.pttl(key_of(limiter, "u")) <= 3500


def test_lua_counter_ttl_is_set_when_a_window_starts_and_kept_within_it(
    client: redis.Redis, clock: ManualClock
) -> None:
    """Later admissions of a window leave its TTL (the end of the next window) be; the next
    window's first admission moves it one window on and carries the count over."""
    limiter = make("sliding-counter-lua", client, "sliding-counter:limit=5,window=2", clock)
    key = key_of(limiter, "u")
    advance(clock, client, 0.5)
    assert limiter.check("u").remaining == 4
    advance(clock, client, 1.0)
    assert limiter.check("u").remaining == 3
    assert 2000 < client.pttl(key) <= 2500  # still at 4 s
    advance(clock, client, 1.0)  # 2.5 s: estimate 0 + 2 x 0.75 = 1.5
    assert limiter.check("u").remaining == 2
    assert 3000 < client.pttl(key) <= 3500  # now at 6 s


def test_lua_log_of_attempts_counts_refusals_and_says_when_room_comes_back(
    client: redis.Redis, clock: ManualClock
) -> None:
    """Under count=attempts the log keeps every request: one that keeps asking stays locked out
    as Part 3's log does, and retry_after is when all but limit - 1 have slid out."""
    attempts = "sliding-window:limit=2,window=2,count=attempts"
    lua = make("sliding-log-attempts-lua", client, attempts, clock)
    piped = make("sliding-log-pipeline-attempts", client, attempts, clock)
    asked = []
    for _ in range(4):  # at 0, 0.5, 1 and 1.5 s
        asked.append((lua.check("atomic"), piped.check("piped").allowed))
        advance(clock, client, 0.5)
    assert [(d.allowed, p) for d, p in asked] == [(True, True)] * 2 + [(False, False)] * 2
    assert client.zcard(key_of(lua, "atomic")) == 4
    # logged at 0, 0.5, 1 and 1.5: room for one once three have slid out, at 1 + 2 = 3 s
    assert asked[3][0].retry_after == pytest.approx(1.5)
    advance(clock, client, 1.0)  # at 3 s: only 1.5 is in (1, 3]
    assert lua.check("atomic").allowed
