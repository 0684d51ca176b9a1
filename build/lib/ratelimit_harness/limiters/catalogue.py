"""The catalogue: every limiter of the chapter, the policy it is judged by, and the flaws the
harness must catch in it (none for the correct ones), each with the reason in one line.

The flaws are the chapter's claims; where the harness proves one wrong, the evidence wins and
the entry changes with a note.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from ratelimit_harness.limiters.base import Limiter
from ratelimit_harness.limiters.colleague import Colleague
from ratelimit_harness.limiters.fixed_window_block_lua import FixedWindowBlockLua
from ratelimit_harness.limiters.fixed_window_block_renewed import FixedWindowBlockRenewed
from ratelimit_harness.limiters.fixed_window_expire_ms import FixedWindowExpireMs
from ratelimit_harness.limiters.fixed_window_first_lua import FixedWindowFirstLua
from ratelimit_harness.limiters.fixed_window_incr_expire import FixedWindowIncrExpire
from ratelimit_harness.limiters.fixed_window_lua import FixedWindowLua, FixedWindowPhaseLua
from ratelimit_harness.limiters.fixed_window_phase_ttl import FixedWindowPhaseTtl
from ratelimit_harness.limiters.fixed_window_refund_get_set import FixedWindowRefundGetSet
from ratelimit_harness.limiters.fixed_window_setnx_incr import FixedWindowSetnxIncr
from ratelimit_harness.limiters.fixed_windows_lua import FixedWindowsLua
from ratelimit_harness.limiters.fixed_windows_two_trips import FixedWindowsTwoTrips
from ratelimit_harness.limiters.gcra_lua import GcraLua
from ratelimit_harness.limiters.in_memory import InMemory
from ratelimit_harness.limiters.leaky_bucket import LeakyBucket
from ratelimit_harness.limiters.naive_get_set import NaiveGetSet
from ratelimit_harness.limiters.policy import Policy
from ratelimit_harness.limiters.sliding_counter_lua import SlidingCounterLua
from ratelimit_harness.limiters.sliding_counter_mget_incr import SlidingCounterMgetIncr
from ratelimit_harness.limiters.sliding_log_lua import SlidingLogAttemptsLua, SlidingLogLua
from ratelimit_harness.limiters.sliding_log_pipeline import (
    SlidingLogPipeline,
    SlidingLogPipelineAttempts,
)
from ratelimit_harness.limiters.token_bucket_client_clock import TokenBucketClientClock
from ratelimit_harness.limiters.token_bucket_lua import TokenBucketLua
from ratelimit_harness.limiters.token_bucket_nonatomic import TokenBucketNonatomic
from ratelimit_harness.limiters.token_bucket_weighted_drain import TokenBucketWeightedDrain
from ratelimit_harness.limiters.token_bucket_weighted_lua import TokenBucketWeightedLua


class Flaw(StrEnum):
    OVER_ADMISSION = "over-admission"
    WRONGFUL_REJECTION = "wrongful-rejection"
    IMMORTAL_KEY = "immortal-key"
    EXCESS_TTL = "excess-ttl"
    COLLISION = "collision"


@dataclass(frozen=True)
class Entry:
    name: str
    factory: Callable[..., Limiter]
    policy: str  # an example policy of the kind the limiter is judged by
    summary: str
    flaws: Mapping[Flaw, str] = field(default_factory=dict)  # flaw -> how it arises, and where
    note: str = ""
    race: str | None = None  # the policy a race uses, when its kind's small one will not do
    costs: tuple[int, ...] = (1,)  # what a raced request may cost: a weighted limiter's several
    gives_back: bool = False  # raced with every other admitted request given back (refund)

    @property
    def policy_kind(self) -> str:
        return Policy.parse(self.policy).kind

    @property
    def promise(self) -> str:
        """What its limiter enforces (``Policy.promise``): the kind, with its anchor if any."""
        return Policy.parse(self.policy).promise

    def build(self, client: Any, policy: Policy, **clocks: Any) -> Limiter:
        return self.factory(client, policy, **clocks)


OVER, WRONG, IMMORTAL = Flaw.OVER_ADMISSION, Flaw.WRONGFUL_REJECTION, Flaw.IMMORTAL_KEY
EXCESS = Flaw.EXCESS_TTL
# the fixed windows keyed by the instance's clock, under clock skew
SKEWED_WINDOWS_OVER = (
    "Part 2 keys the window by each instance's clock: under clock skew two instances count "
    "one moment in different windows"
)
SKEWED_WINDOWS_WRONG = (
    "Part 2 keys the window by each instance's clock: under clock skew an instance behind "
    "still counts the window that ended"
)
SKEW_NOTE = "the flaws under clock skew are not in the chapter; the race explorer showed them"
FIXED, SLIDING = "fixed-window:limit=5,window=2", "sliding-window:limit=5,window=2"
COUNTER, BUCKET = "sliding-counter:limit=5,window=2", "token-bucket:capacity=5,rate=2.5"
PER_SECOND_AND_MINUTE = "fixed-window:limit=10,window=1 + fixed-window:limit=100,window=60"
SEVERAL_LIMITS = "several limits at once, the most common configuration of released limiters"
WEIGHTED = "weighted requests (tokens for an LLM call, bytes, a batch), as released limiters take"
# a second window whose edge falls inside the first's, so that one refills while the other holds
EXCESS_TTL_NOTE = "a TTL in the wrong unit, as a released npm limiter passes milliseconds to EXPIRE"
GIVEN_BACK = "requests given back when their work fails (express-rate-limit's skipFailedRequests)."
RACED_GIVE_BACK = "fixed-window:limit=2,window=10"  # room for one admitted while one is given back
RACED_WINDOWS = "fixed-window:limit=1,window=10 + fixed-window:limit=1,window=15"
RACED_WEIGHTED = "token-bucket:capacity=2,rate=0.2"  # room for a request of 2, or two of 1
BLOCKED = "fixed-window:limit=5,window=2,anchor=first,block=6"
PENALTIES = "a block once over (blockDuration in rate-limiter-flexible and NestJS' throttler)"
ATTEMPTS = "sliding-window:limit=5,window=2,count=attempts"
COUNTS_ATTEMPTS = (
    "a log of every attempt, refused or not (rolling-rate-limiter's documented design)"
)
PHASED = "fixed-window:limit=5,window=2,phase=crc32"
PHASES = "each identity's windows shifted by a hash of it, as django-ratelimit's are"
RACED_BLOCK = "fixed-window:limit=1,window=10,anchor=first,block=20"  # a block of two windows

ENTRIES = (
    Entry(
        "naive-get-set",
        NaiveGetSet,
        FIXED,
        "Part 7 WRONG: GET, compare, SET EX",
        {
            OVER: "Part 7: two instances GET the same count before either SETs",
            WRONG: "Part 7: the window is the key's TTL, started by an admission (restarted by "
            "every SET EX), not the clock's: a new window finds the old count",
        },
        note="wrongful-rejection is not in the chapter; the harness shows it",
    ),
    Entry(
        "colleague",
        Colleague,
        FIXED,
        "Practice Problem 3: GET then SETEX 60",
        {
            OVER: "Problem 3: GET then SETEX races like Part 7's naive limiter",
            WRONG: "Problem 3: the window is a hard-coded 60 s that every SETEX pushes further out",
        },
    ),
    Entry(
        "fixed-window-incr-expire",
        FixedWindowIncrExpire,
        FIXED,
        "Part 2: INCR, then EXPIRE if count == 1",
        {
            IMMORTAL: "Part 7: a crash between INCR and EXPIRE leaves a counter with no TTL",
            OVER: SKEWED_WINDOWS_OVER,
            WRONG: SKEWED_WINDOWS_WRONG,
        },
        note=SKEW_NOTE,
    ),
    Entry(
        "fixed-window-setnx-incr",
        FixedWindowSetnxIncr,
        FIXED,
        "Part 7 'robust': SET NX EX, then INCR",
        {
            IMMORTAL: "Part 7: the key expires between SET NX and INCR; INCR recreates it, no TTL",
            OVER: "Part 7: that recreated counter starts again at 1, so one more is admitted "
            "(and, as in Part 2, clock skew splits a window)",
            WRONG: SKEWED_WINDOWS_WRONG,
        },
        note="over-admission is not in the chapter (neither the recreated counter nor clock "
        "skew); the race explorer showed it, and the wrongful rejection under skew",
    ),
    Entry(
        "fixed-window-lua",
        FixedWindowLua,
        FIXED,
        "Part 7 Lua check-and-increment, server time; gives a request back in one script",
        gives_back=True,
    ),
    Entry(
        "fixed-window-first-lua",
        FixedWindowFirstLua,
        "fixed-window:limit=5,window=2,anchor=first",
        "Lua window started by its first admission, server time",
        note="not in the chapter: the window most released limiters keep (a key's TTL starts it "
        "at a first hit), judged by the promise it makes, fixed-window with anchor=first",
    ),
    Entry(
        "sliding-log-pipeline",
        SlidingLogPipeline,
        SLIDING,
        "Part 3 as written: pipelined log, random-member ZREM undo",
        {
            WRONG: "Part 3: undo ZREMs a fresh random member; refusals stay logged and lock out",
            OVER: "Part 3 stamps entries with the instance's clock, read before the pipeline is "
            "sent: a stale stamp (a pause, a clock behind) slides out of the window early",
            IMMORTAL: "Part 3's pipeline is no transaction (Part 7 offers one as the fix): cut "
            "between ZADD and EXPIRE, it leaves the log with no TTL",
        },
        note="over-admission and immortal-key are not in the chapter; the race explorer "
        "showed them",
    ),
    Entry("sliding-log-lua", SlidingLogLua, SLIDING, "atomic sorted-set log, server time"),
    Entry(
        "sliding-counter-mget-incr",
        SlidingCounterMgetIncr,
        COUNTER,
        "Part 4 as written: MGET, decide, INCR",
        {
            OVER: "Part 4: instances that MGET the same counts all INCR past the limit",
            WRONG: "Part 4 takes the windows from each instance's clock: under clock skew an "
            "instance behind still weighs the window that ended",
            IMMORTAL: "Part 4's INCR, EXPIRE pipeline is no transaction (Part 7 offers one as "
            "the fix): cut between them, it leaves the counter with no TTL",
        },
        note="wrongful-rejection and immortal-key are not in the chapter; the race explorer "
        "showed them",
    ),
    Entry(
        "sliding-counter-lua",
        SlidingCounterLua,
        COUNTER,
        "atomic weighted counter, server time",
        note="judged against its own approximate policy, not the exact sliding window",
    ),
    Entry(
        "token-bucket-nonatomic",
        TokenBucketNonatomic,
        BUCKET,
        "HMGET, compute in Python, HSET",
        {
            OVER: "Part 5: two instances read the same tokens and both spend the last one",
            IMMORTAL: "Part 7: a crash between HSET and EXPIRE leaves the bucket with no TTL, "
            "as one between INCR and EXPIRE does",
        },
        note="immortal-key is not in the chapter; the race explorer showed it",
    ),
    Entry(
        "token-bucket-client-clock",
        TokenBucketClientClock,
        BUCKET,
        "Part 5's Lua, now from each instance's clock",
        {
            OVER: "Part 5: now is each instance's clock: one ahead, or a reading that reaches "
            "Redis late, refills tokens that never accrued",
        },
    ),
    Entry("token-bucket-lua", TokenBucketLua, BUCKET, "Lua with redis.call('TIME')"),
    Entry("gcra-lua", GcraLua, "gcra:capacity=5,rate=2.5", "GCRA, one TAT per key, server time"),
    Entry(
        "leaky-bucket",
        LeakyBucket,
        "leaky-bucket:rate=10,capacity=50",
        "Part 6: queue with fixed drain for outbound calls",
        note="departures never exceed the rate; the caller waits Decision.delay",
    ),
    Entry(
        "in-memory",
        InMemory,
        FIXED,
        "per-process counter (Part 7, four instances)",
        {
            OVER: "Part 7: with more than one instance each counts only its share",
            WRONG: SKEWED_WINDOWS_WRONG,
        },
        note=SKEW_NOTE,
    ),
    Entry(
        "fixed-windows-lua",
        FixedWindowsLua,
        PER_SECOND_AND_MINUTE,
        "several fixed windows in one Lua script, server time",
        note=f"not in the chapter: {SEVERAL_LIMITS}",
        race=RACED_WINDOWS,
    ),
    Entry(
        "fixed-windows-two-trips",
        FixedWindowsTwoTrips,
        PER_SECOND_AND_MINUTE,
        "each fixed window its own Lua round trip, in turn",
        {
            WRONG: "Part 7's atomicity, one limit at a time: a request the second window "
            "refuses is already counted in the first, which then refuses one it had room for",
        },
        note=f"not in the chapter: {SEVERAL_LIMITS}",
        race=RACED_WINDOWS,
    ),
    Entry(
        "token-bucket-weighted-lua",
        TokenBucketWeightedLua,
        BUCKET,
        "Lua bucket, a request takes its cost in tokens, server time",
        note=f"not in the chapter: {WEIGHTED}",
        race=RACED_WEIGHTED,
        costs=(1, 2),
    ),
    Entry(
        "token-bucket-weighted-drain",
        TokenBucketWeightedDrain,
        BUCKET,
        "Lua bucket that takes the cost before it checks",
        {
            WRONG: "Part 5 takes a token only once it knows there is one; this takes the cost "
            "first, so a refused request larger than what is left still empties the bucket, and "
            "the next caller is refused with tokens to spare",
        },
        note=f"not in the chapter: {WEIGHTED}",
        race=RACED_WEIGHTED,
        costs=(1, 2),
    ),
    Entry(
        "fixed-window-refund-get-set",
        FixedWindowRefundGetSet,
        FIXED,
        "fixed-window-lua, but gives a request back by HMGET, then HSET of the count less it",
        {
            OVER: "Part 7's GET-then-SET, in the give-back: a request another instance admits "
            "between the two trips is written over, and the window admits one more",
            IMMORTAL: "Part 7's SET NX EX then INCR, in the give-back: the window's key expires "
            "between the two trips, and the HSET makes it again with no TTL",
        },
        note=f"not in the chapter: {GIVEN_BACK}",
        race=RACED_GIVE_BACK,
        gives_back=True,
    ),
    Entry(
        "fixed-window-expire-ms",
        FixedWindowExpireMs,
        FIXED,
        "Part 2: INCR, then EXPIRE, given the window in milliseconds",
        {
            EXCESS: "Part 2's EXPIRE takes seconds: given milliseconds, every key outlives its "
            "window a thousand times",
            IMMORTAL: "Part 7: a crash between INCR and EXPIRE leaves a counter with no TTL",
            OVER: SKEWED_WINDOWS_OVER,
            WRONG: SKEWED_WINDOWS_WRONG,
        },
        note=f"not in the chapter: {EXCESS_TTL_NOTE}",
    ),
    Entry(
        "fixed-window-block-lua",
        FixedWindowBlockLua,
        BLOCKED,
        "Lua window started by its first request, and a block once over, server time",
        note=f"not in the chapter: {PENALTIES}",
        race=RACED_BLOCK,
    ),
    Entry(
        "fixed-window-block-renewed",
        FixedWindowBlockRenewed,
        BLOCKED,
        "fixed-window-block-lua, but every refusal sets the block again",
        {
            WRONG: "Part 7's naive limiter restarts its window with every SET EX; this restarts "
            "the block with every refusal in it, so an identity that keeps retrying is refused "
            "long after its block ended (rate-limiter-flexible blocks only on the request that "
            "crosses the limit)",
        },
        note=f"not in the chapter: {PENALTIES}",
        race=RACED_BLOCK,
    ),
    Entry(
        "sliding-log-attempts-lua",
        SlidingLogAttemptsLua,
        ATTEMPTS,
        "sliding-log-lua logging every attempt, refused or not, server time",
        note=f"not in the chapter: {COUNTS_ATTEMPTS}",
    ),
    Entry(
        "sliding-log-pipeline-attempts",
        SlidingLogPipelineAttempts,
        ATTEMPTS,
        "Part 3 as written, held to the attempts its log counts",
        {
            OVER: "Part 3 stamps entries with the instance's clock, read before the pipeline is "
            "sent: a stale stamp slides out of the window early, whatever the log counts",
            IMMORTAL: "Part 3's pipeline is no transaction: cut between ZADD and EXPIRE, it "
            "leaves the log with no TTL",
        },
        note="Part 3's undo ZREMs a member never added, so its log keeps every attempt: held "
        "to that promise, its refusals are no wrongful rejection, and its races are still found",
    ),
    Entry(
        "fixed-window-phase-lua",
        FixedWindowPhaseLua,
        PHASED,
        "fixed-window-lua with each identity's windows shifted by its phase",
        note=f"not in the chapter: {PHASES}",
    ),
    Entry(
        "fixed-window-phase-ttl",
        FixedWindowPhaseTtl,
        PHASED,
        "fixed-window-phase-lua, but the key's TTL runs to the unshifted window's end",
        {
            OVER: "Part 7 sets the TTL to the window's end; this takes the end of the window "
            "aligned to the epoch, so a shifted window's count dies inside it and the window "
            "admits again",
        },
        note=f"not in the chapter: {PHASES}",
    ),
)

CATALOGUE: Mapping[str, Entry] = {entry.name: entry for entry in ENTRIES}
