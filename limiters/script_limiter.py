"""Base of the limiters whose whole decision is one atomic Lua script."""

from __future__ import annotations

from limiters.base import RedisLimiter
from limiters.decision import Decision


class ScriptLimiter(RedisLimiter):
    """Runs ``script_file`` on the identity's one key with ``script_args()``."""

    def script_args(self) -> list[object]:
        raise NotImplementedError

    @property
    def budget(self) -> int:
        """What a Decision reports as its limit."""
        return self.limit

    def check(self, identity: str) -> Decision:
        reply = self.script(keys=[self.key(identity)], args=self.script_args())
        return Decision.from_script(reply, self.budget)
