"""The API under test: a small Starlette app behind the rate-limit middleware (Part 8).

    POST /login      the chapter's brute-force target
    POST /send-otp   queues an SMS through the outbound leaky bucket (Part 6)
    GET  /api/...    reads, by tier (a request with ``X-Fail`` fails: 502, as if downstream had)
    GET  /healthz    unlimited: is this instance up

``create_app()`` is the factory each instance process runs (``granian --factory``); it reads
its settings from the environment ``harness.load.system.fleet`` sets (``InstanceSettings``).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any

import redis
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from ratelimit_harness.harness.history.loads import OUTBOUND
from ratelimit_harness.harness.load.contract.env import ENV
from ratelimit_harness.harness.load.contract.headers import FAIL_HEADER
from ratelimit_harness.harness.load.contract.journals import Journals
from ratelimit_harness.harness.load.contract.rules import Rules, rules_from_json
from ratelimit_harness.harness.load.system.clocks import CLOCK_FILE, true_clock
from ratelimit_harness.harness.load.system.middleware import RateLimitMiddleware
from ratelimit_harness.harness.load.system.outbound import Outbound
from ratelimit_harness.harness.parent_death import die_with_parent
from ratelimit_harness.limiters import resolve


@dataclass(frozen=True)
class InstanceSettings:
    name: str  # app-0, app-1, ...
    rules: Rules
    redis_url: str
    run_dir: str
    provider_url: str
    tag: str  # keeps this run's keys apart from any other's
    cluster: bool = False

    def to_env(self) -> dict[str, str]:
        return {
            f"{ENV}NAME": self.name,
            f"{ENV}RULES": self.rules.to_json(),
            f"{ENV}REDIS_URL": self.redis_url,
            f"{ENV}RUN_DIR": self.run_dir,
            f"{ENV}PROVIDER_URL": self.provider_url,
            f"{ENV}TAG": self.tag,
            f"{ENV}CLUSTER": "1" if self.cluster else "",
        }

    @classmethod
    def from_env(cls) -> InstanceSettings:
        env = os.environ
        return cls(
            name=env[f"{ENV}NAME"],
            rules=rules_from_json(env[f"{ENV}RULES"]),
            redis_url=env[f"{ENV}REDIS_URL"],
            run_dir=env[f"{ENV}RUN_DIR"],
            provider_url=env[f"{ENV}PROVIDER_URL"],
            tag=env[f"{ENV}TAG"],
            cluster=bool(env.get(f"{ENV}CLUSTER")),
        )


def redis_client(url: str, cluster: bool) -> Any:
    if cluster:
        return redis.RedisCluster.from_url(url)
    return redis.Redis.from_url(url)


def _die_with_granian() -> None:
    """granian serves from a worker process it forks; the harness has the kernel kill granian's
    own process when the harness dies (``harness.load.system.fleet.spawn``), and the worker asks the
    same of granian's, or a harness killed outright would leave it serving on its port for good."""
    parent = os.getppid()
    die_with_parent()
    if os.getppid() != parent:  # granian died before the worker asked
        os._exit(1)


def create_app(settings: InstanceSettings | None = None) -> Any:
    if settings is None:  # an instance, as granian's worker runs it
        _die_with_granian()
        settings = InstanceSettings.from_env()
    client = redis_client(settings.redis_url, settings.cluster)
    limiters = {
        rule.name: resolve(rule.limiter)(client, rule.parsed_policy) for rule in settings.rules.all
    }
    skewed = CLOCK_FILE in os.environ  # this instance's time of day may be off: not its journals'
    clock = true_clock() if skewed else time.time
    journals = Journals(settings.run_dir, "server", settings.name, clock)
    outbound = Outbound(
        limiters[OUTBOUND],
        journals[OUTBOUND],
        settings.provider_url,
        tag=settings.tag,
        process=settings.name,
    )

    async def ok(request: Request) -> JSONResponse:
        return JSONResponse({"ok": True, "instance": settings.name})

    async def api(request: Request) -> JSONResponse:
        if FAIL_HEADER in request.headers:  # a failure downstream, for rules that give back
            return JSONResponse({"error": "downstream_failed"}, status_code=502)
        return await ok(request)

    async def send_otp(request: Request) -> JSONResponse:
        decision = await outbound.send(request.scope.get("state", {}).get("identity", "?"))
        if decision is None:
            return JSONResponse({"error": "sms_provider_failed"}, status_code=503)
        if not decision.allowed:
            wait = max(1, round(decision.retry_after or 1))
            headers = {"Retry-After": str(wait)}
            return JSONResponse({"error": "sms_queue_full"}, status_code=503, headers=headers)
        return JSONResponse({"ok": True, "queued_for": decision.delay})

    app = Starlette(
        routes=[
            Route("/login", ok, methods=["POST"]),
            Route("/send-otp", send_otp, methods=["POST"]),
            Route("/api/{rest:path}", api, methods=["GET"]),
            Route("/healthz", ok, methods=["GET"]),
        ]
    )
    return RateLimitMiddleware(app, settings.rules, limiters, journals, tag=settings.tag)
