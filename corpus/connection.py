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


def configure_django(url: str) -> None:
    """Django's settings, once per process: its default cache on the Redis raced."""
    import django
    from django.conf import settings

    if not settings.configured:
        backend = "django.core.cache.backends.redis.RedisCache"
        settings.configure(CACHES={"default": {"BACKEND": backend, "LOCATION": url}})
        django.setup()
    elif (configured := settings.CACHES["default"]["LOCATION"]) != url:
        raise ValueError(f"Django's cache is configured on {configured}, not on {url}")
