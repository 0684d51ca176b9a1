"""Which ways of provisioning Redis work on this machine, and why the others do not; and
whether the race explorer can put programs on its clocks here."""

from __future__ import annotations

from dataclasses import dataclass

from ratelimit_harness.harness.process_clock import probe
from ratelimit_harness.harness.provision.base import Unavailable, ping
from ratelimit_harness.harness.provision.container import (
    LOCAL_IMAGE,
    docker_client,
    engine_address,
    image_name,
    image_present,
)
from ratelimit_harness.harness.provision.embedded import find_binary, version


@dataclass(frozen=True)
class Finding:
    way: str
    usable: bool
    detail: str
    redis: bool = True  # a way of getting a Redis (else: a need of the race explorer)


def diagnose(url: str | None) -> list[Finding]:
    findings = [_url(url), _container(), _embedded()]
    cluster_ways = [f.way for f in findings[1:] if f.usable]
    findings.append(
        Finding(
            "cluster",
            bool(cluster_ways),
            f"3 primaries via {' or '.join(cluster_ways)}"
            if cluster_ways
            else "needs the container or the embedded way",
        )
    )
    findings.append(_clocks())
    return findings


def _clocks() -> Finding:
    why = probe()
    if why:
        detail = f"{why}: race refuses programs (exit 3) unless --allow-real-clock"
        return Finding("race clocks", False, detail, redis=False)
    detail = "programs and the explorer's server follow the schedule's time (vDSO, ptrace)"
    return Finding("race clocks", True, detail, redis=False)


def _url(url: str | None) -> Finding:
    if not url:
        return Finding("url", False, "no URL given (--redis-url or REDIS_URL)")
    try:
        ping(url)
    except Unavailable as why:
        return Finding("url", False, str(why))
    return Finding("url", True, f"{url} answers")


def _container() -> Finding:
    try:
        client = docker_client()
    except Unavailable as why:
        return Finding("container", False, str(why))
    image = image_name()
    if not image_present(client, image):
        return Finding(
            "container",
            False,
            f"Docker engine at {engine_address()} answers, but image {image} is not "
            "present (pulled on first use where a registry answers; else run "
            f"`make redis-image` and set REDIS_IMAGE={LOCAL_IMAGE})",
        )
    return Finding("container", True, f"Docker engine at {engine_address()}, image {image}")


def _embedded() -> Finding:
    try:
        binary = find_binary()
        return Finding("embedded", True, f"{binary} ({version(binary)})")
    except (Unavailable, OSError) as why:
        return Finding("embedded", False, str(why))
