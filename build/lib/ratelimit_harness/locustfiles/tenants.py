"""Free against pro tenants on /api/*: the same traffic from both tiers, each held by its own
rule (a free key to a small fixed window, a ``pro-`` key to a large token bucket)."""

import random

from locust import between, task

from ratelimit_harness.harness.load.swarm import ApiUser


class FreeTenant(ApiUser):
    wait_time = between(0.01, 0.05)

    @task
    def read(self) -> None:
        self.call("GET", "/api/reports", api_key=f"free-{random.randrange(5)}")


class ProTenant(ApiUser):
    wait_time = between(0.01, 0.05)

    @task
    def read(self) -> None:
        self.call("GET", "/api/reports", api_key=f"pro-{random.randrange(5)}")
