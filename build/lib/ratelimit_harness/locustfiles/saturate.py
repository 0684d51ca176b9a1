"""Saturation: users that never wait, all on one API key, each sending the next request as soon
as the last is answered: the most requests Locust can send, for measuring the harness itself
(``bench/load_speed.py``) and a live view under the heaviest load."""

from locust import constant, task

from ratelimit_harness.harness.load.swarm import ApiUser


class Saturating(ApiUser):
    wait_time = constant(0)

    @task
    def read(self) -> None:
        self.call("GET", "/api/items", api_key="saturate")
