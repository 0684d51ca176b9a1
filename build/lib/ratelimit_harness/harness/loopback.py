"""Whether a host, or the Redis server a URL names, is on this machine's loopback.

Loopback is the addresses 127.0.0.0/8 and ::1, and the name ``localhost``. The harness reaches
loopback only unless told otherwise: its proxies forward there alone, a load refuses another host
without ``--allow-remote``, and the app's middleware trusts ``X-Forwarded-For`` from there alone.
No name is looked up: ``example.com`` is refused even where it resolves to 127.0.0.1.
"""

from __future__ import annotations

import ipaddress
import urllib.parse


def loopback_address(host: str) -> str | None:
    """The address to reach ``host`` at if it is on loopback, else None.

    ``localhost`` (in any case) is 127.0.0.1, where the harness's servers listen; an address is
    itself. ``[::1]`` is how a URL writes ::1, not an address: None."""
    if host.lower() == "localhost":
        return "127.0.0.1"
    try:
        return host if ipaddress.ip_address(host).is_loopback else None
    except ValueError:
        return None


def redis_on_loopback(url: str, who: str) -> tuple[urllib.parse.SplitResult, tuple[str, int]]:
    """``url`` split, and the loopback (address, port) of the Redis it names; a URL that names
    no host names localhost, and no port 6379.

    Anything else is a ValueError that says why, naming ``who`` (the part that refuses it): a
    scheme other than redis://, a port that is no number, a host off loopback. The message never
    repeats the URL, which may hold a password."""
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port or 6379
    except ValueError as error:
        raise ValueError(f"not a Redis URL ({error})") from None
    if parts.scheme != "redis":
        raise ValueError(f"{who} forwards to a redis:// URL only, not {parts.scheme}://")
    host = parts.hostname or "localhost"
    address = loopback_address(host)
    if address is None:
        raise ValueError(f"{who} forwards to a loopback address only, not {host}")
    return parts, (address, port)
