"""Plug-in limiters written the way production limiters are, not to suit the explorer: scripts
that read the server's TIME and name their keys themselves, clients of their own, threads of
their own, real libraries. Each is ``factory(client, policy)`` (``module:attribute``)."""

from __future__ import annotations

import threading
import time
from typing import Any

import redis

from ratelimit_harness.limiters import Policy

# A fixed window on the server's clock, its key named inside the script from the identity (no
# KEYS): the shape of most production scripts. The window's key lives exactly one window.
SERVER_TIME_WINDOW = """
local now = redis.call('TIME')
local ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local window_ms = tonumber(ARGV[3])
local key = 'app:rl:{' .. ARGV[1] .. '}:' .. math.floor(ms / window_ms)
local count = redis.call('INCR', key)
if count == 1 then
  redis.call('PEXPIRE', key, window_ms - ms % window_ms)
end
return count <= tonumber(ARGV[2]) and 1 or 0
"""

# The same, but its key is given a TTL shorter than what is left of its window: the counter is
# gone before the window ends, and the window admits again.
SHORT_LIVED_WINDOW = SERVER_TIME_WINDOW.replace("window_ms - ms % window_ms", "window_ms / 2")


# A window started by the identity's first hit, as `limits` and most released limiters keep it:
# INCR, and PEXPIRE for a window when the count is 1. The window is the key's life, on the
# server's clock; Redis keeps the key through the millisecond of its deadline.
FIRST_HIT_WINDOW = """
local key = 'app:rl:{' .. ARGV[1] .. '}'
local count = redis.call('INCR', key)
if count == 1 then
  redis.call('PEXPIRE', key, tonumber(ARGV[3]))
end
return count <= tonumber(ARGV[2]) and 1 or 0
"""

# The same with a key that lives half its window: the window restarts early and admits again.
SHORT_FIRST_HIT_WINDOW = FIRST_HIT_WINDOW.replace("tonumber(ARGV[3])", "tonumber(ARGV[3]) / 2")


def _window_ms(policy: Policy) -> int:
    return round(float(policy.window or 1) * 1000)


def _script_limiter(client: Any, policy: Policy, source: str) -> Any:
    script = client.register_script(source)

    def check(identity: str) -> bool:
        return bool(script(args=[identity, policy.limit, _window_ms(policy)]))

    return check


def server_time_window(client: Any, policy: Policy) -> Any:
    """Correct: atomic, on the server's clock, every key with a TTL."""
    return _script_limiter(client, policy, SERVER_TIME_WINDOW)


def short_lived_window(client: Any, policy: Policy) -> Any:
    """Broken: its key expires halfway through the window."""
    return _script_limiter(client, policy, SHORT_LIVED_WINDOW)


def first_hit_window(client: Any, policy: Policy) -> Any:
    """Correct for a window started by its first admission (``anchor=first``)."""
    return _script_limiter(client, policy, FIRST_HIT_WINDOW)


def short_first_hit_window(client: Any, policy: Policy) -> Any:
    """Broken: its key, and so its window, lives half the window."""
    return _script_limiter(client, policy, SHORT_FIRST_HIT_WINDOW)


def own_client_on_the_pool(client: Any, policy: Policy) -> Any:
    """Correct, through a client of its own built on the given one's pool (as `limits` does
    when handed a pool)."""
    return server_time_window(redis.Redis(connection_pool=client.connection_pool), policy)


def own_client_from_the_url(client: Any, policy: Policy) -> Any:
    """Correct, through a client it builds from the URL at its first request."""
    kwargs = client.connection_pool.connection_kwargs
    url = f"redis://{kwargs['host']}:{kwargs['port']}/{kwargs.get('db', 0)}"
    built: list[Any] = []

    def check(identity: str) -> bool:
        if not built:
            built.append(server_time_window(redis.Redis.from_url(url), policy))
        return bool(built[0](identity))

    return check


def watch_multi_client_clock(client: Any, policy: Policy) -> Any:
    """Correct while the app servers' clocks agree: an optimistic transaction (WATCH, GET,
    MULTI/INCR/EXPIRE/EXEC, retried on conflict) on a window key from ``time.time()``."""
    window = float(policy.window or 1)

    def check(identity: str) -> bool:
        key = f"app:tx:{{{identity}}}:{int(time.time() // window)}"
        while True:
            with client.pipeline() as pipe:
                try:
                    pipe.watch(key)
                    count = int(pipe.get(key) or 0)
                    if count >= (policy.limit or 0):
                        pipe.unwatch()
                        return False
                    pipe.multi()
                    pipe.incr(key)
                    pipe.expire(key, max(1, int(window)))
                    pipe.execute()
                    return True
                except redis.WatchError:
                    continue

    return check


def with_a_thread_of_its_own(client: Any, policy: Policy) -> Any:
    """Correct, and it keeps a thread that pings Redis and reads its clock now and then (a
    health check, a clock sync), as some client libraries do."""
    inner = server_time_window(client, policy)
    stop = threading.Event()

    def keep_alive() -> None:
        while not stop.wait(0.001):
            client.time()

    threading.Thread(target=keep_alive, name="keep-alive", daemon=True).start()
    return inner


def limits_moving_window(client: Any, policy: Policy) -> Any:
    """`limits`' moving window on the given client's pool (optional extra: compare)."""
    from limits import RateLimitItemPerSecond
    from limits.storage import RedisStorage
    from limits.strategies import MovingWindowRateLimiter

    kwargs = client.connection_pool.connection_kwargs
    uri = f"redis://{kwargs['host']}:{kwargs['port']}"
    storage = RedisStorage(uri, connection_pool=client.connection_pool)
    item = RateLimitItemPerSecond(int(policy.limit or 1), int(policy.window or 1))
    limiter = MovingWindowRateLimiter(storage)
    return lambda identity: limiter.hit(item, identity)


def pyrate_redis_bucket(client: Any, policy: Policy) -> Any:
    """pyrate-limiter's RedisBucket; its Limiter starts a leak thread of its own."""
    from pyrate_limiter import Duration, Limiter, Rate, RedisBucket

    rate = Rate(int(policy.limit or 1), Duration.SECOND * int(policy.window or 1))
    limiter = Limiter(RedisBucket.init([rate], client, "pyrate"))
    return lambda identity: limiter.try_acquire(identity, blocking=False)
