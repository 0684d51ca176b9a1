"""The answer a limiter gives for one request."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Decision:
    """One limiter decision. Fields a limiter cannot tell are None.

    - ``allowed``: the request may proceed.
    - ``remaining``: how many more requests would be allowed right after this one.
    - ``limit``: the budget of the policy (requests per window, or bucket capacity).
    - ``reset_at``: epoch seconds when the budget is whole again (X-RateLimit-Reset).
    - ``retry_after``: seconds until a request could be allowed; 0 when allowed (Retry-After).
    - ``now``: the instant, in epoch seconds, the limiter believed it was when it decided.
    - ``delay``: seconds the caller must wait before acting (a leaky bucket's queue); else 0.
    - ``binding``: under a composite policy, which of its limits (its place in
      ``Policy.limits``) ``remaining``, ``limit`` and the times are about: the one that refused
      the request, else the one with the least room left. None: one limit, or not said.
    """

    allowed: bool
    remaining: int | None = None
    limit: int | None = None
    reset_at: float | None = None
    retry_after: float | None = None
    now: float | None = None
    delay: float = 0.0
    binding: int | None = None

    @classmethod
    def from_script(cls, reply: list[Any], limit: int) -> Decision:
        """Decode the reply every Lua limiter returns, all times in microseconds:
        ``{allowed, remaining, reset_after, retry_after, now[, delay]}``."""
        allowed, remaining, reset_after, retry_after, now, *delay = reply
        return cls(
            allowed == 1,
            remaining,
            limit,
            (now + reset_after) / 1e6,
            retry_after / 1e6,
            now / 1e6,
            delay[0] / 1e6 if delay else 0.0,
        )

    @classmethod
    def from_user(cls, result: object) -> Decision:
        """Adapt what a plugged-in limiter returned: a bool, or an object with ``.allowed``
        (and, optionally, any of the other fields)."""
        if isinstance(result, bool):
            return cls(allowed=result)
        if not hasattr(result, "allowed"):
            raise TypeError(
                f"a limiter returned {result!r}: expected a bool or an object with .allowed"
            )
        optional = ("remaining", "limit", "reset_at", "retry_after", "now", "binding")
        return cls(
            allowed=bool(result.allowed),
            **{name: getattr(result, name) for name in optional if hasattr(result, name)},
        )
