"""What a run left in Redis, read back for the immortal-key check: each key and its TTL in
seconds (-1: none), in the form ``harness.history.snapshot`` stores."""

from __future__ import annotations

from typing import Any


def key_ttls(client: Any, match: str | None = None) -> dict[str, float]:
    """Every key (matching ``match``, a SCAN pattern) and its TTL; a key gone between the scan
    and its PTTL is left out, not taken for one without a TTL."""
    found: dict[str, float] = {}
    for key in client.scan_iter(match=match, count=1000):
        ttl = client.pttl(key)
        if ttl != -2:
            found[key.decode()] = ttl / 1000 if ttl >= 0 else -1.0
    return found
