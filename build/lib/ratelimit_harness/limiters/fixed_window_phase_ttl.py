"""fixed-window-phase-ttl: fixed-window-phase-lua, but the key's TTL is the time left in the
unshifted window (broken). The count of an identity whose phase is not 0 dies before its window
ends, and the window admits a second round."""

from ratelimit_harness.limiters.fixed_window_lua import FixedWindowPhaseLua


class FixedWindowPhaseTtl(FixedWindowPhaseLua):
    script_file = "fixed_window_phase_ttl.lua"
