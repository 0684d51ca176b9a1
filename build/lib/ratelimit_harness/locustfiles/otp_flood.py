"""An OTP flood: many numbers asking for codes at once. The send-otp rule holds each identity to
its budget, and the leaky bucket in front of the SMS provider smooths what gets through; the
provider's record of arrivals proves the outbound rate was never exceeded."""

import random

from locust import between, task

from ratelimit_harness.harness.load.swarm import ApiUser


class OtpFlooder(ApiUser):
    wait_time = between(0.05, 0.2)

    @task
    def ask_for_code(self) -> None:
        self.call("POST", "/send-otp", api_key=f"phone-{random.randrange(200)}")
