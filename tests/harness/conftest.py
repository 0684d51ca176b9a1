"""A server on virtual time (Valkey on a clock file), for the explorer's black-box tests:
one per session. Where it cannot start, its tests are skipped, unless every path is required
(HARNESS_REQUIRE_ALL_PATHS=1, as in CI): then they fail."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from ratelimit_harness.harness.provision import RedisServer, Unavailable
from ratelimit_harness.harness.provision.virtual_time import start_on_virtual_time


@pytest.fixture(scope="session")
def virtual_server() -> Iterator[RedisServer]:
    try:
        server = start_on_virtual_time()
    except Unavailable as why:
        if os.environ.get("HARNESS_REQUIRE_ALL_PATHS") == "1":
            pytest.fail(f"a server on virtual time is required but unavailable: {why}")
        pytest.skip(f"no server on virtual time: {why}")
    with server:
        yield server
