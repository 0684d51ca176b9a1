"""The thundering herd after a recovery (run it with ``--nemesis kill-redis``): a few API keys,
each shared by many users who never wait and retry a refused or failed request at once, so that
every identity is at its limit the moment Redis comes back, empty, and the whole herd lands on
counters that start again from nothing."""

import random

from locust import constant, task

from ratelimit_harness.harness.load.swarm import ApiUser

API_KEYS = [f"herd-{n}" for n in range(8)]


class HerdingClient(ApiUser):
    wait_time = constant(0)

    @task
    def hammer(self) -> None:
        key = random.choice(API_KEYS)
        for _ in range(3):  # a refusal or a failure is retried at once, up to twice
            if self.call("GET", "/api/items", api_key=key) == 200:
                return
