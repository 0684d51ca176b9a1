"""The outbound side of ``/send-otp``: Part 6's leaky bucket in front of the SMS provider.

Every instance shares one queue (one key): ``check`` accepts a call with the delay it must wait
before departing, or refuses it (the queue is full). The instance waits, then POSTs to the
provider with when the call was accepted and when the limiter scheduled it to depart; the
provider records the arrival (``harness.load.system.sms_provider``), so the departures are judged
from what the provider saw. The instance journals every decision under the rule ``outbound``:
refusals and failures count from there, accepted calls from the provider's record.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from urllib.parse import urlsplit

from ratelimit_harness.harness.history import Outcome, Recorder
from ratelimit_harness.limiters import Decision, Limiter

QUEUE_KEY = "sms"  # the one identity of the outbound queue
SEND_TIMEOUT = 10.0


class Outbound:
    def __init__(
        self,
        limiter: Limiter,
        journal: Recorder,
        provider_url: str,
        *,
        tag: str,
        process: str,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.limiter = limiter
        self.journal = journal
        parts = urlsplit(provider_url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.key = f"{tag}:outbound:{QUEUE_KEY}"
        self.process = process
        self.clock = clock

    async def send(self, identity: str) -> Decision | None:
        """Queue one SMS for ``identity`` and send it when its turn comes. The decision, or
        None when the limiter or the provider failed (journalled ``unknown``)."""
        token = self.journal.invoke(QUEUE_KEY)
        try:
            decision = self.limiter.check(self.key)
        except Exception:  # a user's limiter may raise anything
            self.journal.complete(token, Outcome.UNKNOWN)
            return None
        if not decision.allowed:
            self.journal.complete(token, Outcome.REJECTED, decision.now)
            return decision
        accepted_at = decision.now if decision.now is not None else self.clock()
        await asyncio.sleep(decision.delay)
        try:
            await self._post(identity, accepted_at, accepted_at + decision.delay)
        except (OSError, TimeoutError, ValueError):
            self.journal.complete(token, Outcome.UNKNOWN, decision.now)
            return None
        self.journal.complete(token, Outcome.ALLOWED, decision.now)
        return decision

    async def _post(self, identity: str, accepted_at: float, departs_at: float) -> None:
        body = json.dumps(
            {
                "identity": identity,
                "process": self.process,
                "accepted_at": accepted_at,
                "departs_at": departs_at,
            }
        ).encode()
        head = (
            f"POST /sms HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n"
        ).encode()
        async with asyncio.timeout(SEND_TIMEOUT):
            reader, writer = await asyncio.open_connection(self.host, self.port)
            try:
                writer.write(head + body)
                status_line = await reader.readline()
            finally:
                writer.close()
        if status_line.split()[1:2] != [b"200"]:
            raise ValueError(f"the SMS provider answered {status_line!r}")
