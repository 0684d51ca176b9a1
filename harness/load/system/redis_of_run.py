"""A load run's Redis: which one (given, started, or none for targets of their own), and each
rule's keys in it, with their TTLs: those already there as the run starts (state the judge
cannot see), and those the run left, for the final verdict."""

from __future__ import annotations

import os
from typing import Any

import redis

from ratelimit_harness.harness.leftovers import key_ttls
from ratelimit_harness.harness.load.contract.rules import SERVICE, Rule, Rules
from ratelimit_harness.harness.load.system.service import Service
from ratelimit_harness.harness.provision import RedisServer, provision, provision_cluster

NO_REDIS = "none"  # a RedisServer's ``how`` when the run has none (a --target of its own)


def redis_for(
    how: str | None,
    url: str | None,
    cluster: bool,
    service: Service | None = None,
    *,
    replicas: bool = False,
) -> RedisServer:
    """The run's Redis: given, started (a cluster with ``replicas``: a replica per primary),
    or (for targets with no URL given) none."""
    if service is not None and service.targets and not (url or os.environ.get("REDIS_URL")):
        return RedisServer("", NO_REDIS, "the targets' own, not read (no --redis-url)")
    if cluster and not url:
        return provision_cluster(how, replicas=replicas)
    return provision(how, url)


def rule_keys(
    server: RedisServer, cluster: bool, tag: str | None, rules: Rules
) -> dict[str, dict[str, float]]:
    """Each rule's keys in Redis now, with their TTLs in seconds (-1: none): those of
    its ``keys`` glob, else those naming this run's tag (the harness's app names them so); a
    service's lone rule on a Redis the harness started owns every key there. A Redis the
    harness was given is never read beyond these. ``tag`` None: as the run starts, when no key
    can name its tag yet, so those rules are not looked for."""
    lone = len(rules.rules) == 1 and server.how != "url"  # a lone rule on a Redis of our own
    found = {rule.name: key_glob(rule, tag, lone) for rule in rules.all}
    globs = {name: glob for name, glob in found.items() if glob}
    if server.how == NO_REDIS or not globs:
        return {}
    url = server.url
    client: Any = redis.RedisCluster.from_url(url) if cluster else redis.Redis.from_url(url)
    try:
        return {name: key_ttls(client, glob) for name, glob in globs.items()}
    finally:
        client.close()


def key_glob(rule: Rule, tag: str | None, lone: bool) -> str | None:
    """Which keys are ``rule``'s (see ``rule_keys``); None: none can be told, or (``tag`` None)
    none can be there yet."""
    if rule.keys:
        return rule.keys
    if rule.limiter != SERVICE:
        return f"*{tag}:{rule.name}:*" if tag else None
    return "*" if lone else None
