"""Weighted requests: each user has an API key of its own, and each request costs 1, 2 or 3
units, drawn at random, in the header the rule reads its cost from:
``ratelimit-harness load --locustfile weighted --limiter token-bucket-weighted-lua --cost X-Cost``.
A rule that reads no cost header counts each request as its own number says."""

import itertools
import random

from locust import constant_pacing, task

from ratelimit_harness.harness.load.swarm import ApiUser

COSTS = (1, 2, 3)
_numbers = itertools.count()


class WeightedClient(ApiUser):
    wait_time = constant_pacing(0.1)

    def on_start(self) -> None:
        super().on_start()
        self.api_key = f"weighted-{next(_numbers)}"
        self.costs = random.Random(self.api_key)  # the same costs on every run

    @task
    def spend(self) -> None:
        self.call("GET", "/api/items", api_key=self.api_key, cost=self.costs.choice(COSTS))
