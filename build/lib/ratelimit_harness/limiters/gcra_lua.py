"""gcra-lua: the generic cell rate algorithm on one key, server time (correct)."""

from ratelimit_harness.limiters.script_limiter import ScriptLimiter


class GcraLua(ScriptLimiter):
    policy_kinds = ("gcra",)
    script_file = "gcra.lua"
