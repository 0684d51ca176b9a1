"""The boundary attack (Part 2): each attacker sends a volley just before a window edge of
/api/*'s rule and another just after it. A fixed window admits both (twice its limit within a
moment); judge the rule by the sliding window of the same limit to see it:
``ratelimit-harness load --locustfile boundary --judge-by sliding-window:limit=10,window=1``."""

import itertools
import time

import gevent
from locust import constant, task

from ratelimit_harness.harness.load.swarm import ApiUser

VOLLEY, LEAD = 10, 0.05  # requests per volley; seconds before and after the edge
_numbers = itertools.count()


class BoundaryAttacker(ApiUser):
    wait_time = constant(0)

    def on_start(self) -> None:
        super().on_start()
        self.api_key = f"attacker-{next(_numbers)}"
        self.window = self.pipes.rules.named("api").parsed_policy.window or 1.0

    @task
    def volleys(self) -> None:
        edge = (time.time() // self.window + 1) * self.window
        for start in (edge - LEAD, edge):
            gevent.sleep(max(0.0, start - time.time()))
            for _ in range(VOLLEY):
                self.call("GET", "/api/items", api_key=self.api_key)
