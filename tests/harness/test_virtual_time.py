"""A server on virtual time: its clock, its expiry and PTTL follow the file the explorer
writes, TIME to the microsecond, back and forth, with no wait after a write, on Valkey and on
Debian's redis-server alike; and it can keep real time again."""

from __future__ import annotations

import os
import time
from itertools import accumulate
from pathlib import Path

import pytest
import redis

from ratelimit_harness.harness.provision import RedisServer, Unavailable
from ratelimit_harness.harness.provision.embedded import valkey_binary
from ratelimit_harness.harness.provision.virtual_time import (
    START,
    ServerClock,
    server_microseconds,
    start_on_virtual_time,
)

pytestmark = pytest.mark.integration

# a Lua script's own TIME, in microseconds (what a limiter on the server's clock reads)
SCRIPT_TIME = "local t = redis.call('TIME') return t[1] * 1000000 + t[2]"
GAPS_US = (1, 2, 137, 499, 901)  # between one write and the next, forth
CPUINFO = Path("/proc/cpuinfo")
CONSTANT_TSC = CPUINFO.exists() and " constant_tsc" in CPUINFO.read_text()


def _now_ms(client: redis.Redis) -> int:
    return server_microseconds(client) // 1000


def test_time_and_expiry_follow_the_clock_file(virtual_server: RedisServer) -> None:
    client = redis.Redis.from_url(virtual_server.url)
    clock = ServerClock(virtual_server.clock_file)
    clock.set(START + 0.25)
    assert _now_ms(client) == round((START + 0.25) * 1000)
    client.set("virtual:k", 1, px=1000)
    clock.set(START + 1.25)  # its deadline: still there
    assert client.pttl("virtual:k") == 0
    assert client.exists("virtual:k") == 1
    clock.set(START + 1.251)  # a millisecond past it: gone
    assert client.pttl("virtual:k") == -2
    clock.set(START - 3600)  # and back, as each schedule starts again at START
    assert _now_ms(client) == round((START - 3600) * 1000)
    client.close()


def test_time_is_the_instant_written_to_the_microsecond(virtual_server: RedisServer) -> None:
    client = redis.Redis.from_url(virtual_server.url)
    clock = ServerClock(virtual_server.clock_file)
    # forth by gaps of 1 us to 0.9 ms, across whole milliseconds and seconds; then back
    gaps = (GAPS_US[step % len(GAPS_US)] for step in range(400))
    forth = list(accumulate(gaps, initial=round((START + 59.99) * 1_000_000)))
    back = [round(START * 1_000_000) - step * 12_345_678 for step in range(100)]
    told: list[tuple[int, ...]] = []
    for written in forth + back:
        clock.set(written / 1_000_000)
        as_command = [server_microseconds(client) for _ in range(3)]  # at once, then again
        told.append((*as_command, int(client.eval(SCRIPT_TIME, 0))))
    # exact each time, so never behind the instant before it
    assert told == [(written,) * 4 for written in forth + back]
    client.close()


def test_a_server_whose_time_strays_from_the_file_is_turned_down() -> None:
    # /proc/cpuinfo not hidden: Valkey takes the TSC where it says constant_tsc
    if CONSTANT_TSC:
        with pytest.raises(Unavailable, match=r"to the microsecond .*monotonic clock: X86 TSC"):
            start_on_virtual_time(valkey_binary(), hidden=())
        return
    with start_on_virtual_time(valkey_binary(), hidden=()) as server:  # clock_gettime: exact
        client = redis.Redis.from_url(server.url)
        assert client.info("server")["monotonic_clock"] == "POSIX clock_gettime"
        client.close()


DEBIAN_REDIS_SERVER = Path("/usr/bin/redis-server")  # apt's, which CI installs


def debian_redis_server() -> str:
    """Debian's redis-server, by its path (a run that hides it from PATH, as CI's tier on a
    machine without one does, still has it), else skip, or fail where every path is
    required."""
    if not DEBIAN_REDIS_SERVER.exists():
        if os.environ.get("HARNESS_REQUIRE_ALL_PATHS") == "1":
            pytest.fail(f"{DEBIAN_REDIS_SERVER} is required (apt-get install redis-server)")
        pytest.skip(f"no {DEBIAN_REDIS_SERVER}")
    return str(DEBIAN_REDIS_SERVER)


@pytest.mark.parametrize("binary", ["valkey", "redis-server"])
def test_each_server_binary_follows_the_clock_with_no_preload(binary: str) -> None:
    """Valkey from pip and Debian's redis-server (jemalloc; it never started under libfaketime)
    both give the file's instant as TIME and expire a key the millisecond after its deadline
    (counted from the millisecond it was set in)."""
    path = valkey_binary() if binary == "valkey" else debian_redis_server()
    with start_on_virtual_time(path) as server:
        client = redis.Redis.from_url(server.url)
        pid = client.info("server")["process_id"]
        assert b"LD_PRELOAD" not in Path(f"/proc/{pid}/environ").read_bytes()
        clock = ServerClock(server.clock_file)
        clock.set(START + 7.654321)
        assert server_microseconds(client) == 1_800_000_007_654_321
        client.set("k", 1, px=1500)
        clock.set(START + 9.154999)
        assert client.exists("k") == 1
        clock.set(START + 9.155)
        assert client.exists("k") == 0
        client.close()


def test_the_server_can_keep_real_time_again(virtual_server: RedisServer) -> None:
    client = redis.Redis.from_url(virtual_server.url)
    clock = ServerClock(virtual_server.clock_file)
    clock.follow_real_time()
    assert abs(_now_ms(client) / 1000 - time.time()) < 1
    clock.set(START)
    assert _now_ms(client) == round(START * 1000)
    client.close()
