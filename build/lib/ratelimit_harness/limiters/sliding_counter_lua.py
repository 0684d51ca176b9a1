"""sliding-counter-lua: Part 4's weighted two-window counter as one script (correct for its
own, approximate policy)."""

from ratelimit_harness.limiters.script_limiter import ScriptLimiter


class SlidingCounterLua(ScriptLimiter):
    policy_kinds = ("sliding-counter",)
    script_file = "sliding_counter.lua"
