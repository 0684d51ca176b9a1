"""The fixed-window family, sequentially, against a real Redis: naive-get-set, colleague,
fixed-window-incr-expire, fixed-window-setnx-incr, fixed-window-lua and in-memory."""

from typing import Any

import pytest
import redis

from ratelimit_harness.limiters import Policy
from tests.clocks import START, ManualClock, advance
from tests.limiters.helpers import admitted, key_of, make, run

pytestmark = pytest.mark.integration

FIXED = "fixed-window:limit=5,window=2"
ALL = [
    "naive-get-set",
    "colleague",
    "fixed-window-incr-expire",
    "fixed-window-setnx-incr",
    "fixed-window-lua",
    "in-memory",
]
ALIGNED = ["fixed-window-incr-expire", "fixed-window-setnx-incr", "fixed-window-lua", "in-memory"]


@pytest.mark.parametrize("name", ALL)
def test_admits_exactly_limit_in_a_window(
    name: str, client: redis.Redis, clock: ManualClock
) -> None:
    decisions = run(make(name, client, FIXED, clock), 8)
    assert [d.allowed for d in decisions] == [True] * 5 + [False] * 3


@pytest.mark.parametrize("name", ALIGNED)
def test_budget_returns_at_the_next_aligned_window(
    name: str, client: redis.Redis, clock: ManualClock
) -> None:
    limiter = make(name, client, FIXED, clock)
    advance(clock, client, 1.5)
    assert admitted(limiter, 7) == 5
    advance(clock, client, 0.5)  # exactly at the boundary: a new window
    assert admitted(limiter, 7) == 5


@pytest.mark.parametrize("name", ALL)
def test_identities_are_counted_apart(name: str, client: redis.Redis, clock: ManualClock) -> None:
    limiter = make(name, client, FIXED, clock)
    assert admitted(limiter, 6, "alice") == 5
    assert admitted(limiter, 6, "bob") == 5


@pytest.mark.parametrize(
    ("name", "ttl"),
    [
        ("naive-get-set", 2),
        ("colleague", 60),
        ("fixed-window-incr-expire", 2),
        ("fixed-window-setnx-incr", 2),
        ("fixed-window-lua", 2),
    ],
)
def test_every_key_gets_a_ttl(name: str, ttl: int, client: redis.Redis, clock: ManualClock) -> None:
    run(make(name, client, FIXED, clock), 7)
    keys = list(client.scan_iter())
    assert keys
    assert all(0 < client.ttl(key) <= ttl for key in keys)


def test_lua_decision_reports_remaining_reset_and_retry(
    client: redis.Redis, clock: ManualClock
) -> None:
    advance(clock, client, 0.5)
    decisions = run(make("fixed-window-lua", client, FIXED, clock), 6)
    assert [d.remaining for d in decisions] == [4, 3, 2, 1, 0, 0]
    assert {d.reset_at for d in decisions} == {clock() + 1.5}
    assert decisions[0].retry_after == 0
    assert decisions[-1].retry_after == pytest.approx(1.5)
    assert decisions[-1].now == clock()


def test_lua_ttl_ends_with_the_window(client: redis.Redis, clock: ManualClock) -> None:
    advance(clock, client, 1.5)
    limiter = make("fixed-window-lua", client, FIXED, clock)
    limiter.check("user:1")
    assert 0 < client.pttl(key_of(limiter)) <= 500


def test_lua_ttl_is_set_when_a_window_starts_and_kept_within_it(
    client: redis.Redis, clock: ManualClock
) -> None:
    """Later admissions of a window leave its TTL be; a key that outlives its window (here made
    to) is started afresh by the next window's first admission: count and TTL."""
    limiter = make("fixed-window-lua", client, FIXED, clock)
    key = key_of(limiter)
    advance(clock, client, 0.5)
    assert limiter.check("user:1").remaining == 4
    advance(clock, client, 1.0)
    assert limiter.check("user:1").remaining == 3
    assert 0 < client.pttl(key) <= 500  # still the end of the window [0, 2)
    client.pexpire(key, 10_000)
    advance(clock, client, 1.0)  # 2.5 s: the window [2, 4)
    assert limiter.check("user:1").remaining == 4
    assert 1000 < client.pttl(key) <= 1500


def test_naive_restarts_its_window_on_every_admission(
    client: redis.Redis, clock: ManualClock
) -> None:
    """The flaw beyond the chapter's: SET EX moves the expiry with each admission, so a
    request in the next aligned window, with nothing admitted in it yet, is refused."""
    naive = make("naive-get-set", client, FIXED, clock)
    advance(clock, client, 1.9)
    assert admitted(naive, 5) == 5
    advance(clock, client, 0.5)  # in the next window now, 0 admitted in it
    assert not naive.check("user:1").allowed
    advance(clock, client, 1.5)  # 2 s after the last SET the key expires at last
    assert naive.check("user:1").allowed


def test_colleague_keeps_its_hard_coded_60_second_window(
    client: redis.Redis, clock: ManualClock
) -> None:
    colleague = make("colleague", client, FIXED, clock)
    assert admitted(colleague, 5) == 5
    advance(clock, client, 30)
    assert not colleague.check("user:1").allowed
    advance(clock, client, 30)
    assert colleague.check("user:1").allowed


class FailOn:
    """A client that forwards everything but loses its connection on one command."""

    def __init__(self, client: redis.Redis, command: str) -> None:
        self.client, self.command = client, command

    def __getattr__(self, name: str) -> Any:
        if name == self.command:
            raise redis.ConnectionError(f"connection lost before {name.upper()}")
        return getattr(self.client, name)


def test_incr_expire_leaves_an_immortal_key_when_expire_is_lost(
    client: redis.Redis, clock: ManualClock
) -> None:
    limiter = make("fixed-window-incr-expire", FailOn(client, "expire"), FIXED, clock)
    with pytest.raises(redis.ConnectionError):
        limiter.check("user:1")
    (key,) = client.scan_iter()
    assert client.ttl(key) == -1  # no TTL: it never expires


class ExpireBeforeIncr:
    """A client on which the key expires between SET NX and INCR (a slow instance)."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)

    def incr(self, key: str) -> int:
        self.client.delete(key)  # the TTL ran out just now
        return int(self.client.incr(key))


def test_setnx_incr_leaves_an_immortal_key_when_it_expires_in_between(
    client: redis.Redis, clock: ManualClock
) -> None:
    limiter = make("fixed-window-setnx-incr", ExpireBeforeIncr(client), FIXED, clock)
    assert limiter.check("user:1").allowed
    (key,) = client.scan_iter()
    assert client.ttl(key) == -1


def test_in_memory_instances_each_admit_the_whole_limit(
    client: redis.Redis, clock: ManualClock
) -> None:
    instances = [make("in-memory", client, FIXED, clock) for _ in range(4)]
    assert sum(admitted(instance, 5) for instance in instances) == 20
    assert list(client.scan_iter()) == []


FIRST = "fixed-window:limit=5,window=2,anchor=first"


def test_first_anchored_windows_start_at_the_first_admission_after_the_last_ended(
    client: redis.Redis, clock: ManualClock
) -> None:
    limiter = make("fixed-window-first-lua", client, FIRST, clock)
    advance(clock, client, 1.5)
    assert admitted(limiter, 7) == 5  # the window [1.5, 3.5)
    advance(clock, client, 1.0)  # 2.5: past the aligned edge at 2, still in the window
    assert not limiter.check("user:1").allowed
    advance(clock, client, 1.0)  # 3.5: exactly at its end, the next window starts
    assert admitted(limiter, 7) == 5


def test_first_anchored_decision_reports_the_window_from_its_start(
    client: redis.Redis, clock: ManualClock
) -> None:
    limiter = make("fixed-window-first-lua", client, FIRST, clock)
    advance(clock, client, 0.5)
    first = limiter.check("user:1")
    assert (first.remaining, first.reset_at) == (4, clock() + 2)
    advance(clock, client, 0.5)
    decisions = run(limiter, 5)
    assert [d.remaining for d in decisions] == [3, 2, 1, 0, 0]
    assert decisions[-1].retry_after == pytest.approx(1.5)
    assert 1000 < client.pttl(key_of(limiter)) <= 1500  # set at the window's start, kept


def test_first_anchored_keys_are_named_apart_from_aligned_ones(
    client: redis.Redis, clock: ManualClock
) -> None:
    first = make("fixed-window-first-lua", client, FIRST, clock)
    aligned = make("fixed-window-lua", client, FIXED, clock)
    assert key_of(first) != key_of(aligned)
    assert key_of(first).endswith(":limit=5,window=2,anchor=first")


# --- giving a request back ----------------------------------------------------------------


@pytest.mark.parametrize("name", ["fixed-window-lua", "fixed-window-refund-get-set"])
def test_a_request_given_back_makes_room_in_its_own_window_only(
    name: str, client: redis.Redis, clock: ManualClock
) -> None:
    limiter = make(name, client, "fixed-window:limit=2,window=2", clock)
    first, _ = run(limiter, 2)
    assert not limiter.check("user:1").allowed
    limiter.refund("user:1", first)  # type: ignore[attr-defined]
    assert [d.allowed for d in run(limiter, 2)] == [True, False]
    advance(clock, client, 2)  # the next window: a give-back of the last one gives nothing
    late = limiter.check("user:1")
    limiter.refund("user:1", first)  # type: ignore[attr-defined]
    assert [d.allowed for d in run(limiter, 2)] == [True, False]
    limiter.refund("user:1", late, 2)  # type: ignore[attr-defined]  # never below nothing
    assert [d.allowed for d in run(limiter, 3)] == [True, True, False]


def test_a_block_ends_on_time_unless_every_refusal_renews_it(
    client: redis.Redis, clock: ManualClock
) -> None:
    """Windows of 2 s started by the first request, 2 each; the request that finds its window
    full blocks the identity for 6 s. Asked every 1.5 s after that, the correct limiter lets it
    back once the block is over; the renewed one never does."""
    blocked = "fixed-window:limit=2,window=2,anchor=first,block=6"
    lua = make("fixed-window-block-lua", client, blocked, clock)
    renewed = make("fixed-window-block-renewed", client, blocked, clock)
    seen = []
    for step in (0.5, 0.5, 1.6, 1.5, 1.5, 1.5, 1.5, 0):  # at 0, 0.5, 1 (blocked to 7), ..., 8.6
        seen.append((lua.check("a").allowed, renewed.check("b").allowed))
        advance(clock, client, step)
    assert [a for a, _ in seen] == [True, True, False, False, False, False, True, True]
    assert [b for _, b in seen] == [True, True] + [False] * 6


def test_windows_shifted_by_the_identitys_phase_keep_their_count_to_their_end(
    client: redis.Redis, clock: ManualClock
) -> None:
    """user:1's windows of 10 s start 3 s past each multiple of 10. Admitted 4 s into one, the
    correct limiter keeps the count to the window's end; the twin's key dies at the multiple of
    10, 3 s before it, and the window admits again."""
    phased = "fixed-window:limit=1,window=10,phase=crc32"
    assert Policy.parse(phased).origin("user:1") == 3
    lua = make("fixed-window-phase-lua", client, phased, clock)
    twin = make("fixed-window-phase-ttl", client, phased, clock)
    advance(clock, client, 7)  # START is a multiple of 10: the window [3, 13) is 4 s old
    first = lua.check("user:1")
    assert first.allowed
    assert first.reset_at == pytest.approx(START + 13)
    assert twin.check("user:1").allowed
    advance(clock, client, 4)  # 11: the same window
    assert not lua.check("user:1").allowed
    assert twin.check("user:1").allowed
    advance(clock, client, 2)  # 13: the next window
    assert lua.check("user:1").allowed
