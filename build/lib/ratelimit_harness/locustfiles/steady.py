"""Steady fair use: every user has an API key of its own and stays under its budget; when
refused all the same, it waits the advertised Retry-After and tries once more, so a broken
Retry-After shows up as a header lie."""

import itertools

from locust import constant_pacing, task

from ratelimit_harness.harness.load.swarm import ApiUser

_numbers = itertools.count()


class FairClient(ApiUser):
    wait_time = constant_pacing(0.25)  # 4 requests a second against /api/*'s 10

    def on_start(self) -> None:
        super().on_start()
        self.api_key = f"fair-{next(_numbers)}"

    @task
    def read(self) -> None:
        self.call_politely("GET", "/api/items", api_key=self.api_key)
