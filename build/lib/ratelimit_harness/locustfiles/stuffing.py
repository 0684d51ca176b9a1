"""Credential stuffing on /login: many addresses trying a few passwords each, and a few
addresses trying many, so the login rule (5 per 15 minutes per identity) is met again and
again by identities that come and go."""

import random

from locust import between, task

from ratelimit_harness.harness.load.swarm import ApiUser


class Stuffer(ApiUser):
    wait_time = between(0.01, 0.05)

    @task(4)
    def spray(self) -> None:
        address = f"10.{random.randrange(256)}.{random.randrange(256)}.{random.randrange(1, 255)}"
        for _ in range(random.randint(1, 3)):
            self.call("POST", "/login", client_ip=address)

    @task(1)
    def hammer(self) -> None:
        self.call("POST", "/login", client_ip=f"192.0.2.{random.randrange(1, 9)}")
