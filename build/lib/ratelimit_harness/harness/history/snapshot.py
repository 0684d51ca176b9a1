"""What a run left in Redis, for the state checks: each key and its TTL in seconds (-1: none).

Stored as JSON Lines, ``{"key": "...", "ttl": 1.5}`` per line.
"""

from __future__ import annotations

import json
import math
import os

from ratelimit_harness.harness.history.errors import HistoryError


def read_snapshot(path: str | os.PathLike[str]) -> dict[str, float]:
    ttls: dict[str, float] = {}
    try:
        with open(path, encoding="utf-8") as lines:
            for number, line in enumerate(lines, 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                    key, ttl = record["key"], float(record["ttl"])
                except (ValueError, KeyError, TypeError) as error:
                    raise HistoryError(f"not a key snapshot line ({error})", path, number) from None
                if not isinstance(key, str) or not (ttl == -1 or (ttl >= 0 and math.isfinite(ttl))):
                    raise HistoryError("expected a string key and a TTL >= 0 or -1", path, number)
                ttls[key] = ttl
    except OSError as error:
        raise HistoryError(str(error.strerror or error), path) from None
    return ttls


def write_snapshot(path: str | os.PathLike[str], ttls: dict[str, float]) -> None:
    with open(path, "w", encoding="utf-8") as out:
        for key, ttl in sorted(ttls.items()):
            out.write(json.dumps({"key": key, "ttl": ttl}) + "\n")
