"""Shared fixtures: one Redis per provisioning path per session, a clean database per test.

Every integration test runs on each provisioning path of HARNESS_PATHS (the embedded path by
default; CI adds the container path). Where a path is not available the tests on it are skipped,
unless HARNESS_REQUIRE_ALL_PATHS=1 (as in CI), where a missing path fails the run.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
import redis
from hypothesis import settings
from redis.cluster import RedisCluster

from ratelimit_harness.harness.provision import (
    RedisServer,
    Unavailable,
    provision,
    provision_cluster,
)
from ratelimit_harness.harness.provision.container import LOCAL_IMAGE
from tests.clocks import ManualClock

# the paths every integration test runs on: the embedded server alone unless HARNESS_PATHS says
# otherwise (CI: "container,embedded")
PATHS = tuple(os.environ.get("HARNESS_PATHS", "embedded").split(","))
# no deadline: a first example can take seconds on a loaded machine (a CI runner, or ours with
# the suite beside a benchmark: 328 ms once for a shrinking test whose other calls take 2 ms),
# and time is measured by the benchmarks in bench/, not by failing tests
settings.register_profile("quick", max_examples=60, deadline=None)  # development
settings.register_profile("thorough", max_examples=400, deadline=None)  # CI: HYPOTHESIS_PROFILE
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "quick"))
if not os.environ.get("REDIS_IMAGE"):  # tests never pull an image; set it to use another
    os.environ["REDIS_IMAGE"] = LOCAL_IMAGE


def _start(how: str, cluster: bool) -> RedisServer:
    try:
        return provision_cluster(how) if cluster else provision(how)
    except Unavailable as why:
        if os.environ.get("HARNESS_REQUIRE_ALL_PATHS") == "1":
            pytest.fail(f"{how} Redis required but unavailable: {why}")
        pytest.skip(f"{how} Redis unavailable: {why}")


@pytest.fixture(scope="session", params=PATHS)
def redis_server(request: pytest.FixtureRequest) -> Iterator[RedisServer]:
    with _start(request.param, cluster=False) as server:
        yield server


@pytest.fixture(scope="session", params=PATHS)
def cluster_server(request: pytest.FixtureRequest) -> Iterator[RedisServer]:
    with _start(request.param, cluster=True) as server:
        yield server


@pytest.fixture
def client(redis_server: RedisServer) -> Iterator[redis.Redis]:
    connection = redis.Redis.from_url(redis_server.url)
    connection.flushall()
    yield connection
    connection.close()


@pytest.fixture
def cluster_client(cluster_server: RedisServer) -> Iterator[RedisCluster]:
    connection = RedisCluster.from_url(cluster_server.url)
    connection.flushall(target_nodes=RedisCluster.PRIMARIES)
    yield connection
    connection.close()


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()
