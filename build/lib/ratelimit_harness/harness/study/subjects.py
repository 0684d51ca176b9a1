"""What the study measures: the correct limiters of the catalogue, one per row of the chapter's
Part 10 table, each with the policy of the same budget (``limit`` requests per ``window``
seconds) and what the chapter claims for it."""

from __future__ import annotations

from dataclasses import dataclass

from ratelimit_harness.limiters import CATALOGUE, Policy

LIMIT, WINDOW = 100, 60.0  # the chapter's running example: 100 requests a minute


@dataclass(frozen=True)
class Subject:
    limiter: str  # a catalogue name
    algorithm: str  # the row of the chapter's table
    memory: str  # the chapter's claims, as its table words them
    accuracy: str
    burst: str

    def policy(self, limit: int = LIMIT, window: float = WINDOW) -> Policy:
        """The policy of this limiter's kind that allows ``limit`` per ``window``: a window of
        that limit, or a bucket of that capacity refilled (drained) at ``limit / window``."""
        kind = CATALOGUE[self.limiter].policy_kind
        if kind in ("fixed-window", "sliding-window", "sliding-counter"):
            return Policy(kind, limit=limit, window=window)
        return Policy(kind, capacity=limit, rate=limit / window)


SUBJECTS = (
    Subject("fixed-window-lua", "Fixed Window", "O(1)", "Low*", "Hard cutoff"),
    Subject("sliding-log-lua", "Sliding Window Log", "O(requests)", "Perfect", "Hard cutoff"),
    Subject("sliding-counter-lua", "Sliding Window Ctr", "O(1)", "~Perfect", "Hard cutoff"),
    Subject("token-bucket-lua", "Token Bucket", "O(1)", "Perfect", "Configurable"),
    Subject("gcra-lua", "GCRA (not in the table)", "-", "-", "-"),
    Subject("leaky-bucket", "Leaky Bucket", "O(queue)", "Perfect", "Smoothed"),
)
FOOTNOTE = "* Fixed window vulnerable to boundary attack (2x burst at window edges)"
