"""fixed-window-first-lua: a window started by the first admission after the last one ended,
as a key's TTL starts it, in one Lua script on server time (correct)."""

from ratelimit_harness.limiters.script_limiter import ScriptLimiter


class FixedWindowFirstLua(ScriptLimiter):
    policy_kinds = ("fixed-window:anchor=first",)
    script_file = "fixed_window_first.lua"
