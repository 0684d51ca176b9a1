"""The project's Redis fixtures (one Redis per provisioning path, a clean database per test) for
the model-based tests; the races use the pytest plugin's own ``race`` and ``redis_url``."""

from tests.conftest import client, redis_server

__all__ = ["client", "redis_server"]
