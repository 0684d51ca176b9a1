"""What a wrapper needs of the client the harness hands it, for a library that builds its own."""

from __future__ import annotations

from typing import Any


def url_of(client: Any) -> str:
    """The ``redis://`` URL of a redis-py client's server and database."""
    kwargs = client.connection_pool.connection_kwargs
    return f"redis://{kwargs['host']}:{kwargs['port']}/{kwargs.get('db', 0)}"


def whole_seconds(window: float | None) -> int:
    """A window in whole seconds, for a library whose limits take nothing finer."""
    seconds = round(window or 1)
    if seconds != window:
        raise ValueError(f"this library takes windows in whole seconds, not {window}")
    return seconds
