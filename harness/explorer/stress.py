"""The naive alternative, for comparison: threads hammering one limiter for a while, real
clocks, no scheduler, no faults. Its history goes through the same checkers, so the race-test
summary can show what plain stress finds and what it misses (crashes and expiry never happen
to it on purpose, and time barely passes)."""

from __future__ import annotations

import threading
import time

import redis

from ratelimit_harness.harness.checkers import Verdict, check
from ratelimit_harness.harness.decisions import decided
from ratelimit_harness.harness.explorer.schedule.run import Setup
from ratelimit_harness.harness.explorer.server.keyspace import Keyspace
from ratelimit_harness.harness.history import Operation, Outcome
from ratelimit_harness.harness.leftovers import key_ttls
from ratelimit_harness.harness.provision.virtual_time import ServerClock
from ratelimit_harness.limiters import resolve

MAX_REQUESTS = 20_000  # per thread, besides the time bound


def stress(setup: Setup, seconds: float, threads: int = 4, identity: str = "user:1") -> Verdict:
    admin = redis.Redis.from_url(setup.url)
    if setup.clock_file:  # a server on virtual time: real clocks here
        ServerClock(setup.clock_file).follow_real_time()
    keyspace = Keyspace(admin, flush=setup.flush)
    build = resolve(setup.limiter)
    history: list[Operation] = []
    lock = threading.Lock()
    deadline = time.time() + seconds

    def hammer(name: str) -> None:
        client = redis.Redis.from_url(setup.url)
        limiter = build(client, setup.policy)
        done: list[Operation] = []
        for _ in range(MAX_REQUESTS):
            invoked = time.time()
            if invoked >= deadline:
                break
            try:
                decision = limiter.check(identity)
            except (redis.RedisError, OSError):
                done.append(Operation(name, identity, invoked, time.time(), Outcome.UNKNOWN))
                continue
            done.append(decided(name, identity, invoked, time.time(), decision))
        client.close()
        with lock:
            history.extend(done)

    workers = [threading.Thread(target=hammer, args=(f"app-{n}",)) for n in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    ttls = keyspace.ours(key_ttls(admin))
    keyspace.close(ttls)
    admin.close()
    history.sort(key=lambda op: op.invoke)
    return check(history, setup.judge, ttls)
