"""Cost per decision: round trips (counted on the client's connection), commands run on the
server and the server's time (``INFO commandstats``, read before and after; reset first with
``CONFIG RESETSTAT`` only on a Redis the harness started), and the latency the client saw.

Two phases per limiter, on the server's own clock: *admitted*, identities that stay under their
budget (half of it each, so every request passes the whole write path), and *refused*, one
identity past its budget. The script is loaded before either is measured.
"""

from __future__ import annotations

import statistics
from collections import Counter
from typing import Any

import redis

from ratelimit_harness.harness.progress import Progress
from ratelimit_harness.harness.study.judged import Histories, History
from ratelimit_harness.harness.study.space import Space
from ratelimit_harness.harness.study.subjects import LIMIT, SUBJECTS
from ratelimit_harness.limiters import Limiter

CONTAINERS = {"acl", "client", "cluster", "command", "config", "function", "memory", "object"}
CONTAINERS |= {"script", "slowlog", "latency", "module", "pubsub", "xinfo"}
ADMIN = {"info", "config|resetstat"}  # what the study itself sends to read the statistics
ROUND_TRIPS = "round trips"


def command_name(args: tuple[Any, ...]) -> str:
    """A command as ``INFO commandstats`` names it: ``evalsha``, ``script|load``."""
    words = [a.decode() if isinstance(a, bytes) else str(a) for a in args[:2]]
    first = words[0].lower()
    return f"{first}|{words[1].lower()}" if first in CONTAINERS and len(words) > 1 else first


def counting_client(url: str) -> tuple[redis.Redis, Counter[str]]:
    """A client whose every round trip, and every command it sends by name, is counted."""
    sent: Counter[str] = Counter()

    class Counting(redis.Connection):
        def send_command(self, *args: Any, **kwargs: Any) -> None:
            sent[command_name(args)] += 1
            super().send_command(*args, **kwargs)  # type: ignore[no-untyped-call]

        def send_packed_command(self, command: Any, check_health: bool = True) -> None:
            sent[ROUND_TRIPS] += 1
            super().send_packed_command(command, check_health)  # type: ignore[no-untyped-call]

    client = redis.Redis.from_url(url, connection_class=Counting)
    client.ping()  # the handshake of a new connection is not the limiter's
    return client, sent


def command_stats(client: redis.Redis) -> dict[str, dict[str, int]]:
    """Calls and microseconds per command, as ``INFO commandstats`` gives them."""
    stats = client.info("commandstats")
    return {
        name.removeprefix("cmdstat_"): {"calls": int(v["calls"]), "usec": int(v["usec"])}
        for name, v in stats.items()
    }


def measure(space: Space, decisions: int, kept: Histories) -> dict[str, Any]:
    """Each limiter's two phases; every decision it made, and the keys they left, go into
    ``kept`` (``cost/LIMITER``)."""
    rows = {}
    share = LIMIT // 2
    admitted = [f"cost-{i // share}" for i in range(decisions)]
    with Progress("cost per decision", len(SUBJECTS) * 2 * decisions) as bar:
        for subject in SUBJECTS:
            history = kept.of("cost", subject.limiter, subject.policy())
            client, sent = counting_client(space.url)
            limiter = space.limiter(subject.limiter, history.policy, client)
            history.check(limiter, "cost-warm-up")  # loads the script
            for _ in range(LIMIT):
                history.check(limiter, "cost-refused")  # spends its budget
            rows[subject.limiter] = {
                "admitted": phase(space, limiter, sent, admitted, history=history, bar=bar),
                "refused": phase(
                    space, limiter, sent, ["cost-refused"] * decisions, history=history, bar=bar
                ),
            }
            client.close()
            history.keys_left(space, ["cost-warm-up", "cost-refused", *admitted])
    return {"reset_stats": space.owned, "decisions": decisions, "limiters": rows}


def phase(
    space: Space,
    limiter: Limiter,
    sent: Counter[str],
    identities: list[str],
    *,
    history: History,
    bar: Progress,
) -> dict[str, Any]:
    """The cost per decision of checking each of ``identities`` once, in turn (each
    decision recorded in ``history``, outside the latency measured)."""
    space.reset_stats()
    before = command_stats(space.client)
    sent.clear()
    latencies, admitted = [], 0
    for identity in identities:
        decision, took = history.check(limiter, identity)
        admitted += decision.allowed
        latencies.append(took)
        bar.advance()
    after = command_stats(space.client)
    ran = {
        name: {k: v[k] - before.get(name, {}).get(k, 0) for k in ("calls", "usec")}
        for name, v in after.items()
        if name not in ADMIN and v["calls"] > before.get(name, {}).get("calls", 0)
    }
    n = len(identities)
    client_sent = {name: count for name, count in sent.items() if name != ROUND_TRIPS}
    return {
        "decisions": n,
        "admitted": admitted,
        "round_trips": sent[ROUND_TRIPS] / n,
        "commands_sent": sum(client_sent.values()) / n,
        "commands_run": sum(v["calls"] for v in ran.values()) / n,
        "server_usec": sum(ran[name]["usec"] for name in client_sent if name in ran) / n,
        "client_usec_p50": statistics.median(latencies) * 1e6,
        "commands": {name: v["calls"] / n for name, v in sorted(ran.items())},
    }
