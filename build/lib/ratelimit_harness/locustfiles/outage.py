"""A Redis outage, as the clients live it (run it with ``--nemesis kill-redis`` or
``partition``): many identities, each of its own user, at a steady pace under its budget, so
every request matters and each one a fault leaves undecided shows in the verdict's count of
requests refused (or let through unchecked) while Redis was gone."""

import itertools

from locust import constant_pacing, task

from ratelimit_harness.harness.load.swarm import ApiUser

_numbers = itertools.count()


class CustomerDuringAnOutage(ApiUser):
    wait_time = constant_pacing(0.2)  # 5 requests a second against /api/*'s 10

    def on_start(self) -> None:
        super().on_start()
        self.api_key = f"customer-{next(_numbers)}"

    @task
    def read(self) -> None:
        self.call("GET", "/api/items", api_key=self.api_key)
