"""The corpus table: each row a released limiter, pinned, the wrapper that plugs it in, the
policy and faults it is raced with, the verdict expected and why.

``expected`` maps each kind of violation the race must report to the faults its shortest
schedule needs (empty: none, time passing between requests is enough); a row that expects
nothing is expected clean. ``reason`` cites the library's own issue, or the released file and
function that shows it. ``waits_for`` names the engine change a row's verdict depends on that
this tree does not have yet (empty: none); such a row is raced and must fail until it lands.

A row's ``runtime`` is ``python`` (pins ``name==version``, the wrapper ``module:attribute``) or
``node``: a release from npm, its pins ``name@version`` installed with npm into a directory of
its own, its wrapper ``exec:node corpus/npm/<name>.js``, a program on the line protocol that
loads the release from the directory in ``CORPUS_NPM_DIR`` (corpus/npm/lib/release.js).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

NEMESIS_ALL = "crash,stall,skew"


@dataclass(frozen=True)
class Row:
    name: str
    pins: tuple[str, ...]  # the library first, then what it needs that the harness lacks
    shared: bool  # True: pins come from the `corpus` extra; False: a directory of their own
    limiter: str  # the wrapper, as module:attribute (python) or exec:node corpus/npm/... (node)
    raced: str  # the class or function of the library that the wrapper calls
    policy: str
    nemesis: str
    claims: str  # what the library promises, in its own terms
    expected: Mapping[str, frozenset[str]]
    reason: str
    waits_for: tuple[str, ...] = field(default=())
    runtime: str = "python"  # or "node": a release from npm (see the module's text)

    @property
    def library(self) -> str:
        return self.pins[0]

    @property
    def slug(self) -> str:
        """The row's name as a file name: ``limits-1.2.0-fixed-window``."""
        return re.sub(r"[^a-z0-9.]+", "-", self.name.lower()).strip("-")

    @property
    def directory(self) -> str:
        """Where its pins are installed, relative to the project: one per library release."""
        if self.runtime == "node":
            name, _, version = self.library.rpartition("@")
            return f".corpus/npm/{name.strip('@').replace('/', '-')}-{version}"
        return f".corpus/{self.library.replace('==', '-')}"


def _needs(**kinds: str) -> Mapping[str, frozenset[str]]:
    """``_needs(immortal_key="crash")``: kind -> the faults it needs, comma-separated."""
    return {
        kind.replace("_", "-"): frozenset(filter(None, faults.split(",")))
        for kind, faults in kinds.items()
    }


CLEAN: Mapping[str, frozenset[str]] = {}
LIMITS_1 = ("six==1.17.0",)  # limits 1.x imports six; the redis client is the harness'
FASTAPI = (
    "fastapi==0.165.0",
    "annotated-doc==0.0.7",
    "pydantic==2.14.4",
    "pydantic-core==2.50.5",
    "annotated-types==0.8.0",
    "typing-inspection==0.4.5",
    "opentelemetry-api==1.45.2",  # FastAPI's telemetry imports it
)
DJANGO = ("Django==5.2.8", "asgiref==3.11.0", "sqlparse==0.5.3")

PYPI_ROWS = (
    Row(
        "limits 1.2.0 fixed window",
        ("limits==1.2.0", *LIMITS_1),
        False,
        "corpus.limits:fixed_window",
        "FixedWindowRateLimiter on RedisStorage",
        "fixed-window:limit=2,window=10,anchor=first",
        "crash",
        "a fixed window from the first hit",
        _needs(immortal_key="crash", wrongful_rejection="crash"),
        'alisaifee/limits#14 ("redis hit has a race condition"): limits/storage.py '
        "RedisInteractor.incr sends INCR, then EXPIRE when the count is 1; an app server that "
        "dies between them leaves a counter with no TTL, whose key (no window in its name) "
        "then refuses that identity for good: once a window has passed, a refusal with one "
        "admission in the new window (the crashed request's, at the most) is wrongful",
    ),
    Row(
        "limits 1.2.1 fixed window",
        ("limits==1.2.1", *LIMITS_1),
        False,
        "corpus.limits:fixed_window",
        "FixedWindowRateLimiter on RedisStorage",
        "fixed-window:limit=2,window=10,anchor=first",
        NEMESIS_ALL,
        "a fixed window from the first hit",
        CLEAN,
        "the fix of alisaifee/limits#14: limits/storage.py RedisStorage.incr runs "
        "SCRIPT_INCR_EXPIRE, INCR and EXPIRE in one Lua script",
    ),
    Row(
        "limits 5.8.0 fixed window",
        ("limits==5.8.0",),
        False,
        "corpus.limits:fixed_window",
        "FixedWindowRateLimiter on RedisStorage",
        "fixed-window:limit=2,window=10,anchor=first",
        NEMESIS_ALL,
        "a fixed window from the first hit (the key's TTL)",
        CLEAN,
        "limits/storage/redis.py RedisStorage.incr: one Lua script (incr_expire) counts and "
        "sets the TTL; the window is the key's TTL, on the server's clock",
    ),
    Row(
        "limits 5.8.0 moving window",
        ("limits==5.8.0",),
        False,
        "corpus.limits:moving_window",
        "MovingWindowRateLimiter on RedisStorage",
        "sliding-window:limit=2,window=10",
        "crash",
        "a sliding log of the last window",
        CLEAN,
        "limits/storage/redis.py RedisStorage.acquire_entry: one Lua script trims and appends; "
        "it refuses at exactly one window after an admission, a boundary instant",
    ),
    Row(
        "python-redis-rate-limit 0.0.10",
        ("python-redis-rate-limit==0.0.10",),
        True,
        "corpus.redis_rate_limit:rate_limit",
        "RateLimiter(...).limit(client).increment_usage",
        "fixed-window:limit=2,window=10,anchor=first",
        NEMESIS_ALL,
        "at most max_requests per expire seconds, counted from the first",
        CLEAN,
        "redis_rate_limit/__init__.py INCREMENT_SCRIPT: INCRBY and EXPIRE in one Lua script, "
        "the pattern of the Redis INCR documentation",
    ),
    Row(
        "throttled-py 3.5.0 fixed window",
        ("throttled-py==3.5.0",),
        True,
        "corpus.throttled:fixed_window",
        "Throttled(using='fixed_window') on RedisStore",
        "fixed-window:limit=2,window=10",
        "crash",
        "a fixed window aligned to the clock",
        _needs(immortal_key="crash"),
        "throttled/rate_limiter/fixed_window.py RedisLimitAtomicAction.do: INCRBY, then EXPIRE "
        "in a second round trip when the count is the cost (the Lua script beside it is "
        "commented out, for speed); a crash between them leaves a key with no TTL",
    ),
    Row(
        "throttled-py 3.5.0 token bucket",
        ("throttled-py==3.5.0",),
        True,
        "corpus.throttled:token_bucket",
        "Throttled(using='token_bucket') on RedisStore",
        "token-bucket:capacity=2,rate=0.1",
        "none",
        "a bucket of burst tokens, refilled at the quota's rate",
        _needs(over_admission="", wrongful_rejection=""),
        "throttled/rate_limiter/token_bucket.py RedisLimitAtomicActionSpec.SCRIPTS reads the "
        "server's TIME in whole seconds (TIME[1]) and refills floor(elapsed * rate) tokens: a "
        "request late in a second is dated at its start, so tokens come back up to a second "
        "early or late",
    ),
    Row(
        "throttled-py 3.5.0 GCRA",
        ("throttled-py==3.5.0",),
        True,
        "corpus.throttled:gcra",
        "Throttled(using='gcra') on RedisStore",
        "gcra:capacity=2,rate=0.1",
        NEMESIS_ALL,
        "the generic cell rate algorithm, burst requests at once",
        CLEAN,
        "throttled/rate_limiter/gcra.py RedisLimitAtomicActionSpec.SCRIPTS: one Lua script on "
        "the server's TIME to the microsecond keeps the theoretical arrival time, with a TTL",
    ),
    Row(
        "pyrate-limiter 2.10.0 RedisBucket",
        ("pyrate-limiter==2.10.0",),
        False,
        "corpus.pyrate_limiter:redis_bucket_v2",
        "Limiter(RequestRate, bucket_class=RedisBucket)",
        "sliding-window:limit=2,window=10",
        "none",
        "at most limit requests in any interval (a sliding log)",
        _needs(over_admission="", wrongful_rejection="", immortal_key=""),
        'vutran1710/PyrateLimiter#116 ("Redis not working in any concurrency mode"): '
        "pyrate_limiter/bucket.py RedisBucket.put reads LLEN, then RPUSHes in a second round "
        "trip, under a lock of the process only; inspect_expired_items counts the recent items "
        "as an LLEN less a place in a later LRANGE, so another instance trimming in between "
        "makes it refuse; its list has no TTL unless expire_time is given",
    ),
    Row(
        "pyrate-limiter 3.9.0 RedisBucket",
        ("pyrate-limiter==3.9.0",),
        False,
        "corpus.pyrate_limiter:redis_bucket_v3",
        "Limiter(RedisBucket.init(...))",
        "sliding-window:limit=2,window=10",
        "crash",
        "at most limit requests in any interval (a sliding log)",
        _needs(immortal_key=""),
        "the fix of vutran1710/PyrateLimiter#116 in release 3: buckets/redis_bucket.py "
        "RedisBucket.put runs one Lua script (PUT_ITEM); its sorted set still has no TTL (the "
        "Limiter's leak thread trims it)",
    ),
    Row(
        "pyrate-limiter 4.5.1 RedisBucket",
        ("pyrate-limiter==4.5.1",),
        False,
        "corpus.pyrate_limiter:redis_bucket_v4",
        "Limiter(RedisBucket.init(...))",
        "sliding-window:limit=2,window=10",
        "crash,stall,skew",
        "at most limit requests in any interval (a sliding log)",
        _needs(immortal_key="", over_admission="skew"),
        "buckets/redis_bucket.py RedisBucket.put runs one Lua script (PUT_ITEM) with the "
        "stamp time_ns() gave before it was sent: two instances whose clocks are 1 ms apart "
        "log entries the script counts in different windows (a request that stalls between "
        "the two does the same). Its sorted set has no TTL; the Limiter's Leaker thread trims "
        "it every 10 s (raced as an actor of its instance)",
    ),
    Row(
        "Django REST framework 3.16.1 SimpleRateThrottle",
        ("djangorestframework==3.16.1", *DJANGO),
        True,
        "corpus.rest_framework:simple_rate_throttle",
        "SimpleRateThrottle on Django's RedisCache",
        "sliding-window:limit=2,window=60",
        "none",
        "at most num_requests per duration (a sliding log)",
        _needs(over_admission=""),
        "rest_framework/throttling.py SimpleRateThrottle.allow_request GETs the history from "
        "the cache and throttle_success SETs it back: two instances that read the same history "
        "both admit, and one's SET overwrites the other's (a lost update)",
    ),
    Row(
        "fastapi-limiter 0.1.6",
        ("fastapi-limiter==0.1.6", *FASTAPI),
        False,
        "corpus.fastapi_limiter:rate_limiter",
        "RateLimiter dependency on redis.asyncio",
        "fixed-window:limit=2,window=10,anchor=first",
        NEMESIS_ALL,
        "times requests per window, counted from the first (the key's TTL)",
        _needs(over_admission=""),
        "fastapi_limiter/__init__.py FastAPILimiter.lua_script answers PTTL when over the "
        "limit, and RateLimiter.__call__ takes 0 for 'not limited': at the very millisecond of "
        "the key's deadline Redis still holds it with a PTTL of 0, so that request is admitted "
        "and not counted, and the next window admits times more",
    ),
)

IOREDIS = "ioredis@5.11.1"  # the client each npm release is raced on, limiters/js's own
FASTIFY_8_0 = ("fastify-plugin@4.5.1", "ms@2.1.3", "tiny-lru@11.4.7")
FASTIFY_8_1 = ("fastify-plugin@4.5.1", "@lukeed/ms@2.0.2", "toad-cache@3.7.4")

NPM_ROWS = (
    Row(
        "rate-limit-redis 4.2.0",
        ("rate-limit-redis@4.2.0", IOREDIS),
        False,
        "exec:node corpus/npm/rate-limit-redis.js",
        "RedisStore.increment, as express-rate-limit calls it",
        "fixed-window:limit=2,window=10,anchor=first",
        NEMESIS_ALL,
        "at most limit hits per windowMs, from the first (the key's PX)",
        _needs(wrongful_rejection=""),
        "express-rate-limit/rate-limit-redis#209, #216: dist/index.cjs's increment script runs "
        "INCR, PTTL, then PEXPIRE when PTTL <= 0; a hit in the key's last millisecond (PTTL 0) "
        "counts on top of the old window's hits and restarts the window, so the next window "
        "refuses",
        runtime="node",
    ),
    Row(
        "rate-limit-redis 4.2.3",
        ("rate-limit-redis@4.2.3", IOREDIS),
        False,
        "exec:node corpus/npm/rate-limit-redis.js",
        "RedisStore.increment, as express-rate-limit calls it",
        "fixed-window:limit=2,window=10,anchor=first",
        NEMESIS_ALL,
        "at most limit hits per windowMs, from the first (the key's PX)",
        CLEAN,
        'the fix of rate-limit-redis#216 (#218, CHANGELOG 4.2.3: "properly fixed the race '
        'condition that v4.2.1 attempted to address"): the script reads PTTL first and SETs '
        "1 PX windowMs on a key at its deadline",
        runtime="node",
    ),
    Row(
        "rate-limiter-flexible 11.4.0 RateLimiterRedis",
        ("rate-limiter-flexible@11.4.0", IOREDIS),
        False,
        "exec:node corpus/npm/rate-limiter-flexible.js",
        "RateLimiterRedis.consume",
        "fixed-window:limit=2,window=10,anchor=first",
        NEMESIS_ALL,
        "points per duration seconds, from the first (the key's EXPIRE)",
        CLEAN,
        "lib/RateLimiterRedis.js: one Lua script (SET 0 EX NX, INCRBY, PTTL, EXPIRE when the "
        "TTL is -1) on the server's clock, since 2.0.0 (\"Implement RateLimiterRedis using Lua "
        'script for expiring atomic increments")',
        runtime="node",
    ),
    Row(
        "@fastify/rate-limit 8.0.3 RedisStore",
        ("@fastify/rate-limit@8.0.3", *FASTIFY_8_0, IOREDIS),
        False,
        "exec:node corpus/npm/fastify-rate-limit.js",
        "store/RedisStore.js RedisStore.incr",
        "fixed-window:limit=2,window=10,anchor=first",
        "crash",
        "max requests per timeWindow, from the first (the key's PX)",
        _needs(immortal_key="crash"),
        "store/RedisStore.js RedisStore.incr pipelines INCR and PTTL, then sends PEXPIRE "
        "apart when the TTL is -1 and ignores its reply: a crash between them leaves a counter "
        "with no TTL; 8.1.0 moved the three into one script (fastify/fastify-rate-limit#330). "
        "That PEXPIRE goes out as incr answers, unawaited: the explorer races it as a step of "
        "the request it follows",
        runtime="node",
    ),
    Row(
        "@fastify/rate-limit 8.1.0 RedisStore",
        ("@fastify/rate-limit@8.1.0", *FASTIFY_8_1, IOREDIS),
        False,
        "exec:node corpus/npm/fastify-rate-limit.js",
        "store/RedisStore.js RedisStore.incr",
        "fixed-window:limit=2,window=10,anchor=first",
        NEMESIS_ALL,
        "max requests per timeWindow, from the first (the key's PX)",
        CLEAN,
        'fastify/fastify-rate-limit#330 ("Move Redis logic to Redis-Side"): store/RedisStore.js '
        "runs INCR, PTTL and PEXPIRE when the TTL is -1 in one script (rateLimit), on the "
        "server's clock",
        runtime="node",
    ),
    Row(
        "ioredis-ratelimit 2.3.0",
        ("ioredis-ratelimit@2.3.0", IOREDIS),
        False,
        "exec:node corpus/npm/ioredis-ratelimit.js",
        "RateLimiter({key: function, mode: 'binary'})",
        "sliding-window:limit=2,window=10",
        NEMESIS_ALL,
        "at most limit calls in any duration (a sliding log of Date.now() stamps)",
        _needs(wrongful_rejection="", collision="", over_admission="skew"),
        "index.js removeItems sends zrem(key, ...) with key the option, a function here, not "
        "the identity's redisKey: the refused call's stamp stays in its log and every "
        "identity's undo lands on one key (fixed in 3.0.0 on GitHub, never published to npm); "
        "the stamps are the app's clock: one 3 ms off, or stale after a stall, is counted in "
        "another window",
        runtime="node",
    ),
)

ROWS = (*PYPI_ROWS, *NPM_ROWS)
