"""What counts as loopback: 127.0.0.0/8, ::1 and ``localhost``, never a name that must be looked
up; and which Redis URLs a proxy forwards to (redis:// on loopback only)."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest

from ratelimit_harness.harness.loopback import loopback_address, redis_on_loopback


@pytest.mark.parametrize(
    ("host", "address"),
    [
        ("localhost", "127.0.0.1"),
        ("LocalHost", "127.0.0.1"),
        ("127.0.0.1", "127.0.0.1"),
        ("127.0.0.2", "127.0.0.2"),
        ("127.255.255.254", "127.255.255.254"),
        ("::1", "::1"),
        ("[::1]", None),  # a URL's spelling of ::1, not an address
        ("10.0.0.1", None),
        ("192.0.2.7", None),
        ("0.0.0.0", None),  # every interface, not loopback
        ("::", None),
        ("example.com", None),  # never looked up
        ("localhost.", None),
        ("", None),
    ],
)
def test_a_host_is_on_loopback_by_its_address_or_the_name_localhost(
    host: str, address: str | None
) -> None:
    assert loopback_address(host) == address


@pytest.mark.parametrize(
    ("url", "upstream"),
    [
        ("redis://localhost:6390/0", ("127.0.0.1", 6390)),
        ("redis://user:secret@LOCALHOST:6390/5", ("127.0.0.1", 6390)),
        ("redis://127.0.0.2/0", ("127.0.0.2", 6379)),
        ("redis://[::1]:6390", ("::1", 6390)),
        ("redis:///0", ("127.0.0.1", 6379)),  # no host: localhost, as redis-py reads it
    ],
)
def test_a_redis_url_on_loopback_gives_its_address_and_port(
    url: str, upstream: tuple[str, int]
) -> None:
    parts, found = redis_on_loopback(url, "the proxy")
    assert found == upstream
    assert parts == urlsplit(url)  # the caller keeps its credentials and database


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("redis://10.0.0.1:6379/0", "the proxy forwards to a loopback address only, not 10.0.0.1"),
        ("redis://example.com/0", "the proxy forwards to a loopback address only, not example.com"),
        ("rediss://127.0.0.1:6379/0", "the proxy forwards to a redis:// URL only, not rediss://"),
        ("unix:///tmp/redis.sock", "the proxy forwards to a redis:// URL only, not unix://"),
        ("redis://:secret@127.0.0.1:port/0", "not a Redis URL"),
        ("redis://[::1", "not a Redis URL"),
    ],
)
def test_any_other_url_is_refused_without_repeating_it(url: str, why: str) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(why)}") as refused:
        redis_on_loopback(url, "the proxy")
    assert "secret" not in str(refused.value)  # a password in the URL is never said back
