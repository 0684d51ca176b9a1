"""fixed-window-lua: GET, compare and INCR as one Lua script on server time (correct)."""

from ratelimit_harness.limiters.script_limiter import ScriptLimiter


class FixedWindowLua(ScriptLimiter):
    policy_kinds = ("fixed-window",)
    script_file = "fixed_window.lua"
