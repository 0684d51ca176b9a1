from collections.abc import Iterator

import pytest

from ratelimit_harness.harness.provision import RedisServer
from ratelimit_harness.harness.study.space import Space


@pytest.fixture
def space(redis_server: RedisServer, client: object) -> Iterator[Space]:
    """The study's keyspace on the session's Redis (emptied by ``client``)."""
    made = Space(redis_server)
    yield made
    made.close()
