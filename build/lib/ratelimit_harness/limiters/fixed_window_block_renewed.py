"""fixed-window-block-renewed: fixed-window-block-lua's promise, with the block a key of its own
that every refusal sets again (broken): an identity that keeps retrying inside its block is
refused long after the block should have ended."""

from __future__ import annotations

from ratelimit_harness.limiters.fixed_window_block_lua import FixedWindowBlockLua


class FixedWindowBlockRenewed(FixedWindowBlockLua):
    script_file = "fixed_window_block_renewed.lua"

    def keys(self, identity: str) -> tuple[str, ...]:
        return (self.key(identity), self.key(identity, "blocked"))
