"""long2ice/fastapi-limiter: its ``RateLimiter`` dependency on a ``redis.asyncio`` client, called
as FastAPI calls it, with a request from the identity. ``FastAPILimiter`` keeps its client in
class attributes, one per process; each instance here stands for a process of its own, so its
client is put there before each call (instances never run at once)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from types import SimpleNamespace
from typing import Any

from corpus.connection import url_of, whole_seconds
from ratelimit_harness.limiters import Policy


def rate_limiter(client: Any, policy: Policy) -> Callable[[str], Awaitable[bool]]:
    import redis.asyncio
    from fastapi_limiter import FastAPILimiter
    from fastapi_limiter.depends import RateLimiter
    from starlette.requests import Request
    from starlette.responses import Response

    connection = redis.asyncio.Redis.from_url(url_of(client))
    refused = object()

    async def identify(request: Any) -> str:
        return str(request.client.host)

    async def refuse(request: Any, response: Any, pexpire: int) -> object:
        return refused

    limiter = RateLimiter(
        times=policy.limit or 1,
        seconds=whole_seconds(policy.window),
        identifier=identify,
        callback=refuse,
    )
    started: list[bool] = []

    async def check(identity: str) -> bool:
        if not started:
            await FastAPILimiter.init(connection)
            started.append(True)
        FastAPILimiter.redis = connection
        app = SimpleNamespace(routes=[])
        scope = {"type": "http", "method": "GET", "path": "/", "headers": [], "app": app}
        request = Request({**scope, "client": (identity, 0)})
        return await limiter(request, Response()) is not refused

    return check
