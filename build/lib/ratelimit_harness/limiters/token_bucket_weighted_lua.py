"""token-bucket-weighted-lua: token-bucket-lua's script given each request's cost: a request
takes as many tokens as it costs, atomic, on the server's TIME (correct). One that costs more
than the bucket holds is refused and takes none."""

from ratelimit_harness.limiters.script_limiter import ScriptLimiter


class TokenBucketWeightedLua(ScriptLimiter):
    policy_kinds = ("token-bucket",)
    script_file = "token_bucket.lua"
    weighted = True
