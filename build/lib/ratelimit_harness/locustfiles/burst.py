"""Bursts (the default): a handful of API keys, each shared by many users, sent in bursts, so
every identity meets its limit again and again and a broken limiter shows in seconds."""

import random

from locust import between, task

from ratelimit_harness.harness.load.swarm import ApiUser

API_KEYS = [f"team-{n}" for n in range(4)]


class BurstingClient(ApiUser):
    wait_time = between(0.05, 0.2)

    @task
    def burst(self) -> None:
        key = random.choice(API_KEYS)
        for _ in range(5):
            self.call("GET", "/api/items", api_key=key)
