"""Keys as Redis sees them: which a command touches, aging them as time passes, a snapshot."""

from __future__ import annotations

from typing import Any

NO_KEYS = {"PING", "TIME", "SCRIPT", "MULTI", "EXEC", "DISCARD", "UNWATCH", "INFO"}
ALL_ARGS_ARE_KEYS = {"MGET", "DEL", "EXISTS", "UNLINK", "WATCH", "TOUCH"}


def touched(command: tuple[Any, ...]) -> tuple[str, ...]:
    """The keys one command names (a MULTI block: those of every command in it)."""
    name = str(command[0]).upper()
    if name == "MULTI":
        return tuple(k for part in command[1:-1] for k in touched(tuple(str(part).split())))
    if name in NO_KEYS or len(command) < 2:
        return ()
    if name in ("EVAL", "EVALSHA"):
        return tuple(map(_text, command[3 : 3 + int(command[2])]))
    if name in ALL_ARGS_ARE_KEYS:
        return tuple(map(_text, command[1:]))
    return (_text(command[1]),)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def age(client: Any, seconds: float) -> None:
    """Shorten every key's TTL by ``seconds``, deleting those whose TTL runs out: what Redis
    would have done had that much time passed."""
    elapsed_ms = round(seconds * 1000)
    for key in client.scan_iter(count=1000):
        ttl = client.pttl(key)
        if ttl < 0:
            continue
        if ttl <= elapsed_ms:
            client.delete(key)
        else:
            client.pexpire(key, ttl - elapsed_ms)


def snapshot(client: Any) -> dict[str, float]:
    """Every key and its TTL in seconds (-1: none)."""
    ttls = {}
    for key in client.scan_iter(count=1000):
        ttl = client.pttl(key)
        if ttl != -2:
            ttls[_text(key)] = ttl / 1000 if ttl >= 0 else -1.0
    return ttls
