"""Requests that fail downstream, to be given back: users share a few API keys, and one request
in three carries ``X-Fail``, which the app answers 502. A rule that gives back failed requests
(``refund = "failed"``, or ``load --refund failed``) returns each to its window:
``ratelimit-harness load --locustfile failing --limiter fixed-window-lua --refund failed``."""

import itertools
import random

from locust import constant_pacing, task

from ratelimit_harness.harness.load.swarm import ApiUser

KEYS = 4  # API keys the users share, so that give-backs race with admissions
_numbers = itertools.count()


class FailingClient(ApiUser):
    wait_time = constant_pacing(0.02)

    def on_start(self) -> None:
        super().on_start()
        number = next(_numbers)
        self.api_key = f"failing-{number % KEYS}"
        self.fails = random.Random(number)  # the same failures on every run

    @task
    def read(self) -> None:
        self.call("GET", "/api/items", api_key=self.api_key, fail=self.fails.random() < 1 / 3)
