"""token-bucket-weighted-drain: takes a request's cost before it knows there is room, and keeps
an empty bucket when there was not (broken): a request larger than the bucket holds drains it."""

from ratelimit_harness.limiters.script_limiter import ScriptLimiter


class TokenBucketWeightedDrain(ScriptLimiter):
    policy_kinds = ("token-bucket",)
    script_file = "token_bucket_weighted_drain.lua"
    weighted = True
