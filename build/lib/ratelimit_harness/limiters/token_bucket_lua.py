"""token-bucket-lua: Part 5's bucket, atomic, reading the server's TIME (correct)."""

from ratelimit_harness.limiters.script_limiter import ScriptLimiter


class TokenBucketLua(ScriptLimiter):
    policy_kinds = ("token-bucket",)
    script_file = "token_bucket.lua"
