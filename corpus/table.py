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


@dataclass(frozen=True, kw_only=True)
class Row:
    name: str  # unique; its slug names the row's test and the files its race writes
    pins: tuple[str, ...]  # the library first, then what it needs that the harness lacks
    in_corpus_extra: bool  # pins from the `corpus` extra (True) or a directory of their own
    wrapper: str  # given as --limiter: module:attribute (python) or exec:node corpus/npm/... (node)
    raced_api: str  # the class or function of the library that the wrapper calls
    policy: str  # given as --policy
    nemesis: str  # given as --nemesis: the faults the race may inject, or "none"
    claims: str  # what the library promises, in its own terms
    expected: Mapping[str, frozenset[str]]  # the verdict: see the module's text
    reason: str  # the library's own issue, or its released file and function
    waits_for: tuple[str, ...] = field(default=())  # engine changes the verdict needs
    runtime: str = "python"  # or "node": a release from npm (see the module's text)
    costs: tuple[int, ...] = (1,)  # given as --costs: what a request may cost (weighted rows)

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


def _pyrate_rates_and_weights(release: str, wrapper: str, leaker: str) -> Row:
    """A pyrate-limiter release raced with two rates in one bucket and weighted items."""
    return Row(
        name=f"pyrate-limiter {release}, two rates and weights",
        pins=(f"pyrate-limiter=={release}",),
        in_corpus_extra=False,
        wrapper=f"corpus.pyrate_limiter:{wrapper}",
        raced_api="Limiter(RedisBucket.init([rate, rate], ...)).try_acquire(name, weight)",
        policy="sliding-window:limit=2,window=10 + sliding-window:limit=3,window=30",
        nemesis="crash",
        claims="an item of weight n goes in only if every rate has room for n",
        expected=_needs(immortal_key=""),
        reason=(
            "buckets/redis_bucket.py PUT_ITEM checks every rate's window, then ZADDs weight "
            f"entries, in one Lua script; its sorted set has no TTL (the Limiter's {leaker} "
            "trims it)"
        ),
        costs=(1, 2),
    )


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
        name="limits 1.2.0 fixed window",
        pins=("limits==1.2.0", *LIMITS_1),
        in_corpus_extra=False,
        wrapper="corpus.limits:fixed_window",
        raced_api="FixedWindowRateLimiter on RedisStorage",
        policy="fixed-window:limit=2,window=10,anchor=first",
        nemesis="crash",
        claims="a fixed window from the first hit",
        expected=_needs(immortal_key="crash", wrongful_rejection="crash"),
        reason=(
            'alisaifee/limits#14 ("redis hit has a race condition"): limits/storage.py '
            "RedisInteractor.incr sends INCR, then EXPIRE when the count is 1; an app server that "
            "dies between them leaves a counter with no TTL, whose key (no window in its name) "
            "then refuses that identity for good: once a window has passed, a refusal with one "
            "admission in the new window (the crashed request's, at the most) is wrongful"
        ),
    ),
    Row(
        name="limits 1.2.1 fixed window",
        pins=("limits==1.2.1", *LIMITS_1),
        in_corpus_extra=False,
        wrapper="corpus.limits:fixed_window",
        raced_api="FixedWindowRateLimiter on RedisStorage",
        policy="fixed-window:limit=2,window=10,anchor=first",
        nemesis=NEMESIS_ALL,
        claims="a fixed window from the first hit",
        expected=CLEAN,
        reason=(
            "the fix of alisaifee/limits#14: limits/storage.py RedisStorage.incr runs "
            "SCRIPT_INCR_EXPIRE, INCR and EXPIRE in one Lua script"
        ),
    ),
    Row(
        name="limits 5.8.0 fixed window",
        pins=("limits==5.8.0",),
        in_corpus_extra=False,
        wrapper="corpus.limits:fixed_window",
        raced_api="FixedWindowRateLimiter on RedisStorage",
        policy="fixed-window:limit=2,window=10,anchor=first",
        nemesis=NEMESIS_ALL,
        claims="a fixed window from the first hit (the key's TTL)",
        expected=CLEAN,
        reason=(
            "limits/storage/redis.py RedisStorage.incr: one Lua script (incr_expire) counts and "
            "sets the TTL; the window is the key's TTL, on the server's clock"
        ),
    ),
    Row(
        name="limits 5.8.0 moving window",
        pins=("limits==5.8.0",),
        in_corpus_extra=False,
        wrapper="corpus.limits:moving_window",
        raced_api="MovingWindowRateLimiter on RedisStorage",
        policy="sliding-window:limit=2,window=10",
        nemesis="crash",
        claims="a sliding log of the last window",
        expected=CLEAN,
        reason=(
            "limits/storage/redis.py RedisStorage.acquire_entry: one Lua script trims and appends; "
            "it refuses at exactly one window after an admission, a boundary instant"
        ),
    ),
    Row(
        name="python-redis-rate-limit 0.0.10",
        pins=("python-redis-rate-limit==0.0.10",),
        in_corpus_extra=True,
        wrapper="corpus.redis_rate_limit:rate_limit",
        raced_api="RateLimiter(...).limit(client).increment_usage",
        policy="fixed-window:limit=2,window=10,anchor=first",
        nemesis=NEMESIS_ALL,
        claims="at most max_requests per expire seconds, counted from the first",
        expected=CLEAN,
        reason=(
            "redis_rate_limit/__init__.py INCREMENT_SCRIPT: INCRBY and EXPIRE in one Lua script, "
            "the pattern of the Redis INCR documentation"
        ),
    ),
    Row(
        name="throttled-py 3.5.0 fixed window",
        pins=("throttled-py==3.5.0",),
        in_corpus_extra=True,
        wrapper="corpus.throttled:fixed_window",
        raced_api="Throttled(using='fixed_window') on RedisStore",
        policy="fixed-window:limit=2,window=10",
        nemesis="crash",
        claims="a fixed window aligned to the clock",
        expected=_needs(immortal_key="crash"),
        reason=(
            "throttled/rate_limiter/fixed_window.py RedisLimitAtomicAction.do: INCRBY, then EXPIRE "
            "in a second round trip when the count is the cost (the Lua script beside it is "
            "commented out, for speed); a crash between them leaves a key with no TTL"
        ),
    ),
    Row(
        name="throttled-py 3.5.0 token bucket",
        pins=("throttled-py==3.5.0",),
        in_corpus_extra=True,
        wrapper="corpus.throttled:token_bucket",
        raced_api="Throttled(using='token_bucket') on RedisStore",
        policy="token-bucket:capacity=2,rate=0.1",
        nemesis="none",
        claims="a bucket of burst tokens, refilled at the quota's rate",
        expected=_needs(over_admission="", wrongful_rejection=""),
        reason=(
            "throttled/rate_limiter/token_bucket.py RedisLimitAtomicActionSpec.SCRIPTS reads the "
            "server's TIME in whole seconds (TIME[1]) and refills floor(elapsed * rate) tokens: a "
            "request late in a second is dated at its start, so tokens come back up to a second "
            "early or late"
        ),
    ),
    Row(
        name="throttled-py 3.5.0 GCRA",
        pins=("throttled-py==3.5.0",),
        in_corpus_extra=True,
        wrapper="corpus.throttled:gcra",
        raced_api="Throttled(using='gcra') on RedisStore",
        policy="gcra:capacity=2,rate=0.1",
        nemesis=NEMESIS_ALL,
        claims="the generic cell rate algorithm, burst requests at once",
        expected=CLEAN,
        reason=(
            "throttled/rate_limiter/gcra.py RedisLimitAtomicActionSpec.SCRIPTS: one Lua script on "
            "the server's TIME to the microsecond keeps the theoretical arrival time, with a TTL"
        ),
    ),
    Row(
        name="pyrate-limiter 2.10.0 RedisBucket",
        pins=("pyrate-limiter==2.10.0",),
        in_corpus_extra=False,
        wrapper="corpus.pyrate_limiter:redis_bucket_v2",
        raced_api="Limiter(RequestRate, bucket_class=RedisBucket)",
        policy="sliding-window:limit=2,window=10",
        nemesis="none",
        claims="at most limit requests in any interval (a sliding log)",
        expected=_needs(over_admission="", wrongful_rejection="", immortal_key=""),
        reason=(
            'vutran1710/PyrateLimiter#116 ("Redis not working in any concurrency mode"): '
            "pyrate_limiter/bucket.py RedisBucket.put reads LLEN, then RPUSHes in a second round "
            "trip, under a lock of the process only; inspect_expired_items counts the recent items "
            "as an LLEN less a place in a later LRANGE, so another instance trimming in between "
            "makes it refuse; its list has no TTL unless expire_time is given"
        ),
    ),
    Row(
        name="pyrate-limiter 3.9.0 RedisBucket",
        pins=("pyrate-limiter==3.9.0",),
        in_corpus_extra=False,
        wrapper="corpus.pyrate_limiter:redis_bucket_v3",
        raced_api="Limiter(RedisBucket.init(...))",
        policy="sliding-window:limit=2,window=10",
        nemesis="crash",
        claims="at most limit requests in any interval (a sliding log)",
        expected=_needs(immortal_key=""),
        reason=(
            "the fix of vutran1710/PyrateLimiter#116 in release 3: buckets/redis_bucket.py "
            "RedisBucket.put runs one Lua script (PUT_ITEM); its sorted set still has no TTL (the "
            "Limiter's leak thread trims it)"
        ),
    ),
    Row(
        name="pyrate-limiter 4.5.1 RedisBucket",
        pins=("pyrate-limiter==4.5.1",),
        in_corpus_extra=False,
        wrapper="corpus.pyrate_limiter:redis_bucket_v4",
        raced_api="Limiter(RedisBucket.init(...))",
        policy="sliding-window:limit=2,window=10",
        nemesis="crash,stall,skew",
        claims="at most limit requests in any interval (a sliding log)",
        expected=_needs(immortal_key="", over_admission="skew"),
        reason=(
            "buckets/redis_bucket.py RedisBucket.put runs one Lua script (PUT_ITEM) with the stamp "
            "time_ns() gave before it was sent: two instances whose clocks are 1 ms apart log "
            "entries the script counts in different windows (a request that stalls between the two "
            "does the same). Its sorted set has no TTL; the Limiter's Leaker thread trims it every "
            "10 s (raced as an actor of its instance)"
        ),
    ),
    Row(
        name="Django REST framework 3.16.1 SimpleRateThrottle",
        pins=("djangorestframework==3.16.1", *DJANGO),
        in_corpus_extra=True,
        wrapper="corpus.rest_framework:simple_rate_throttle",
        raced_api="SimpleRateThrottle on Django's RedisCache",
        policy="sliding-window:limit=2,window=60",
        nemesis="none",
        claims="at most num_requests per duration (a sliding log)",
        expected=_needs(over_admission=""),
        reason=(
            "rest_framework/throttling.py SimpleRateThrottle.allow_request GETs the history from "
            "the cache and throttle_success SETs it back: two instances that read the same history "
            "both admit, and one's SET overwrites the other's (a lost update)"
        ),
    ),
    Row(
        name="django-ratelimit 4.1.0",
        pins=("django-ratelimit==4.1.0", *DJANGO),
        in_corpus_extra=False,
        wrapper="corpus.django_ratelimit:get_usage",
        raced_api="get_usage(..., increment=True) on Django's RedisCache",
        policy="fixed-window:limit=2,window=10,phase=crc32",
        nemesis=NEMESIS_ALL,
        claims="count per period, each key's periods ending at its own crc32 offset",
        expected=_needs(over_admission="skew", wrongful_rejection="stall", immortal_key="stall"),
        reason=(
            "django_ratelimit/core.py get_usage: cache.add (SET NX EX period + 5 s), then "
            "cache.incr, which Django's RedisCache sends as EXISTS, then INCRBY: a key that "
            "expires between the two comes back with no TTL; one gone before EXISTS raises "
            "ValueError, and get_usage then refuses (it fails closed) a request its new window had "
            "room for. The window is the app server's int(time.time()) shifted by crc32 of the "
            "key: a clock 1 ms off counts a request in the window beside"
        ),
    ),
    Row(
        name="fastapi-limiter 0.1.6",
        pins=("fastapi-limiter==0.1.6", *FASTAPI),
        in_corpus_extra=False,
        wrapper="corpus.fastapi_limiter:rate_limiter",
        raced_api="RateLimiter dependency on redis.asyncio",
        policy="fixed-window:limit=2,window=10,anchor=first",
        nemesis=NEMESIS_ALL,
        claims="times requests per window, counted from the first (the key's TTL)",
        expected=_needs(over_admission=""),
        reason=(
            "fastapi_limiter/__init__.py FastAPILimiter.lua_script answers PTTL when over the "
            "limit, and RateLimiter.__call__ takes 0 for 'not limited': at the very millisecond of "
            "the key's deadline Redis still holds it with a PTTL of 0, so that request is admitted "
            "and not counted, and the next window admits times more"
        ),
    ),
    Row(
        name="limits 5.8.0 fixed window, weighted",
        pins=("limits==5.8.0",),
        in_corpus_extra=False,
        wrapper="corpus.limits:fixed_window_weighted",
        raced_api="FixedWindowRateLimiter.hit(item, identity, cost=n)",
        policy="fixed-window:limit=2,window=10,anchor=first",
        nemesis=NEMESIS_ALL,
        claims="True if cost could be deducted from the rate limit without exceeding it",
        expected=_needs(wrongful_rejection=""),
        reason=(
            "limits/strategies.py FixedWindowRateLimiter.hit returns storage.incr(key, expiry, "
            "amount=cost) <= item.amount: a refused hit has still added its cost, so after a "
            "request of 2 is refused with 1 left, the next request of 1 is refused too"
        ),
        costs=(1, 2),
    ),
    Row(
        name="limits 5.8.0 moving window, weighted",
        pins=("limits==5.8.0",),
        in_corpus_extra=False,
        wrapper="corpus.limits:moving_window_weighted",
        raced_api="MovingWindowRateLimiter.hit(item, identity, cost=n)",
        policy="sliding-window:limit=2,window=10",
        nemesis="crash",
        claims="True if cost could be deducted from the rate limit without exceeding it",
        expected=CLEAN,
        reason=(
            "limits/resources/redis/lua_scripts/acquire_moving_window.lua: one script refuses "
            "when the entry cost places back is still inside the window, and only then pushes "
            "cost entries"
        ),
        costs=(1, 2),
    ),
    *(
        _pyrate_rates_and_weights(release, wrapper, leaker)
        for release, wrapper, leaker in (
            ("3.9.0", "rates_and_weights_v3", "leak thread"),
            ("4.5.1", "rates_and_weights_v4", "Leaker thread"),
        )
    ),
)

IOREDIS = "ioredis@5.11.1"  # the client each npm release is raced on, limiters/js's own
FASTIFY_8_0 = ("fastify-plugin@4.5.1", "ms@2.1.3", "tiny-lru@11.4.7")
FASTIFY_8_1 = ("fastify-plugin@4.5.1", "@lukeed/ms@2.0.2", "toad-cache@3.7.4")

NPM_ROWS = (
    Row(
        name="rate-limit-redis 4.2.0",
        pins=("rate-limit-redis@4.2.0", IOREDIS),
        in_corpus_extra=False,
        wrapper="exec:node corpus/npm/rate-limit-redis.js",
        raced_api="RedisStore.increment, as express-rate-limit calls it",
        policy="fixed-window:limit=2,window=10,anchor=first",
        nemesis=NEMESIS_ALL,
        claims="at most limit hits per windowMs, from the first (the key's PX)",
        expected=_needs(wrongful_rejection=""),
        reason=(
            "express-rate-limit/rate-limit-redis#209, #216: dist/index.cjs's increment script runs "
            "INCR, PTTL, then PEXPIRE when PTTL <= 0; a hit in the key's last millisecond (PTTL 0) "
            "counts on top of the old window's hits and restarts the window, so the next window "
            "refuses"
        ),
        runtime="node",
    ),
    Row(
        name="rate-limit-redis 4.2.3",
        pins=("rate-limit-redis@4.2.3", IOREDIS),
        in_corpus_extra=False,
        wrapper="exec:node corpus/npm/rate-limit-redis.js",
        raced_api="RedisStore.increment, as express-rate-limit calls it",
        policy="fixed-window:limit=2,window=10,anchor=first",
        nemesis=NEMESIS_ALL,
        claims="at most limit hits per windowMs, from the first (the key's PX)",
        expected=CLEAN,
        reason=(
            'the fix of rate-limit-redis#216 (#218, CHANGELOG 4.2.3: "properly fixed the race '
            'condition that v4.2.1 attempted to address"): the script reads PTTL first and SETs 1 '
            "PX windowMs on a key at its deadline"
        ),
        runtime="node",
    ),
    Row(
        name="rate-limiter-flexible 11.4.0 RateLimiterRedis",
        pins=("rate-limiter-flexible@11.4.0", IOREDIS),
        in_corpus_extra=False,
        wrapper="exec:node corpus/npm/rate-limiter-flexible.js",
        raced_api="RateLimiterRedis.consume",
        policy="fixed-window:limit=2,window=10,anchor=first",
        nemesis=NEMESIS_ALL,
        claims="points per duration seconds, from the first (the key's EXPIRE)",
        expected=CLEAN,
        reason=(
            "lib/RateLimiterRedis.js: one Lua script (SET 0 EX NX, INCRBY, PTTL, EXPIRE when the "
            "TTL is -1) on the server's clock, since 2.0.0 (\"Implement RateLimiterRedis using Lua "
            'script for expiring atomic increments")'
        ),
        runtime="node",
    ),
    Row(
        name="rate-limiter-flexible 11.4.0 consume(key, points)",
        pins=("rate-limiter-flexible@11.4.0", IOREDIS),
        in_corpus_extra=False,
        wrapper="exec:node corpus/npm/rate-limiter-flexible.js",
        raced_api="RateLimiterRedis.consume(key, points)",
        policy="fixed-window:limit=2,window=10,anchor=first",
        nemesis=NEMESIS_ALL,
        claims="consume resolves if points are left, rejects if not; refused points stay consumed",
        expected=_needs(wrongful_rejection=""),
        reason=(
            "lib/RateLimiterRedis.js: its Lua script INCRBYs the points before the limit is "
            "compared, and a refusal keeps them: held to a promise that counts admissions, a "
            "request of 2 refused with 1 point left leaves none for the next request of 1"
        ),
        runtime="node",
        costs=(1, 2),
    ),
    Row(
        name="rate-limiter-flexible 11.4.0 consume(key, points), attempts",
        pins=("rate-limiter-flexible@11.4.0", IOREDIS),
        in_corpus_extra=False,
        wrapper="exec:node corpus/npm/rate-limiter-flexible.js",
        raced_api="RateLimiterRedis.consume(key, points)",
        policy="fixed-window:limit=2,window=10,anchor=first,count=attempts",
        nemesis=NEMESIS_ALL,
        claims="consume resolves if points are left, rejects if not; refused points stay consumed",
        expected=CLEAN,
        reason=(
            "the row above, held to the promise it documents (consumedPoints grows with every "
            "consume): every attempt's points counted, it refuses only once they pass the limit"
        ),
        runtime="node",
        costs=(1, 2),
    ),
    Row(
        name="rate-limiter-flexible 11.4.0 blockDuration",
        pins=("rate-limiter-flexible@11.4.0", IOREDIS),
        in_corpus_extra=False,
        wrapper="exec:node corpus/npm/rate-limiter-flexible.js",
        raced_api="RateLimiterRedis({ blockDuration }).consume",
        policy="fixed-window:limit=2,window=10,block=30,anchor=first",
        nemesis=NEMESIS_ALL,
        claims="once points run out, the key is blocked for blockDuration seconds",
        expected=CLEAN,
        reason=(
            "lib/RateLimiterStoreAbstract.js _afterConsume: the consume that finds no point left "
            "is refused, then _block sets the key to its points with blockDuration as its expiry, "
            "in a second round trip. A stall between the two sets the block late; the judge "
            "excuses it, since the refusal that starts a block may be placed as late as its answer"
        ),
        runtime="node",
    ),
    Row(
        name="@fastify/rate-limit 8.0.3 RedisStore",
        pins=("@fastify/rate-limit@8.0.3", *FASTIFY_8_0, IOREDIS),
        in_corpus_extra=False,
        wrapper="exec:node corpus/npm/fastify-rate-limit.js",
        raced_api="store/RedisStore.js RedisStore.incr",
        policy="fixed-window:limit=2,window=10,anchor=first",
        nemesis="crash",
        claims="max requests per timeWindow, from the first (the key's PX)",
        expected=_needs(immortal_key="crash"),
        reason=(
            "store/RedisStore.js RedisStore.incr pipelines INCR and PTTL, then sends PEXPIRE apart "
            "when the TTL is -1 and ignores its reply: a crash between them leaves a counter with "
            "no TTL; 8.1.0 moved the three into one script (fastify/fastify-rate-limit#330). That "
            "PEXPIRE goes out as incr answers, unawaited: the explorer races it as a step of the "
            "request it follows"
        ),
        runtime="node",
    ),
    Row(
        name="@fastify/rate-limit 8.1.0 RedisStore",
        pins=("@fastify/rate-limit@8.1.0", *FASTIFY_8_1, IOREDIS),
        in_corpus_extra=False,
        wrapper="exec:node corpus/npm/fastify-rate-limit.js",
        raced_api="store/RedisStore.js RedisStore.incr",
        policy="fixed-window:limit=2,window=10,anchor=first",
        nemesis=NEMESIS_ALL,
        claims="max requests per timeWindow, from the first (the key's PX)",
        expected=CLEAN,
        reason=(
            'fastify/fastify-rate-limit#330 ("Move Redis logic to Redis-Side"): '
            "store/RedisStore.js runs INCR, PTTL and PEXPIRE when the TTL is -1 in one script "
            "(rateLimit), on the server's clock"
        ),
        runtime="node",
    ),
    Row(
        name="ioredis-ratelimit 2.3.0",
        pins=("ioredis-ratelimit@2.3.0", IOREDIS),
        in_corpus_extra=False,
        wrapper="exec:node corpus/npm/ioredis-ratelimit.js",
        raced_api="RateLimiter({key: function, mode: 'binary'})",
        policy="sliding-window:limit=2,window=10",
        nemesis=NEMESIS_ALL,
        claims="at most limit calls in any duration (a sliding log of Date.now() stamps)",
        expected=_needs(wrongful_rejection="", collision="", over_admission="skew"),
        reason=(
            "index.js removeItems sends zrem(key, ...) with key the option, a function here, not "
            "the identity's redisKey: the refused call's stamp stays in its log and every "
            "identity's undo lands on one key (fixed in 3.0.0 on GitHub, never published to npm); "
            "the stamps are the app's clock: one 3 ms off, or stale after a stall, is counted in "
            "another window"
        ),
        runtime="node",
    ),
)

ROWS = (*PYPI_ROWS, *NPM_ROWS)
