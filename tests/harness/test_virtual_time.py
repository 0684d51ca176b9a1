"""A server on virtual time: its clock, its expiry and PTTL follow the file the explorer
writes, to the millisecond, back and forth; and it can keep real time again."""

from __future__ import annotations

import time

import pytest
import redis

from harness.provision import RedisServer
from harness.provision.virtual_time import START, ServerClock

pytestmark = pytest.mark.integration


def _at(clock: ServerClock, seconds: float) -> None:
    clock.set(seconds)
    clock.settle()


def _now_ms(client: redis.Redis) -> int:
    seconds, micros = client.time()
    return int(seconds) * 1000 + int(micros) // 1000


def test_time_and_expiry_follow_the_clock_file(virtual_server: RedisServer) -> None:
    client = redis.Redis.from_url(virtual_server.url)
    clock = ServerClock(virtual_server.clock_file, client)
    _at(clock, START + 0.25)
    assert _now_ms(client) == round((START + 0.25) * 1000)
    client.set("virtual:k", 1, px=1000)
    _at(clock, START + 1.25)  # its deadline: still there
    assert client.pttl("virtual:k") == 0
    assert client.exists("virtual:k") == 1
    _at(clock, START + 1.251)  # a millisecond past it: gone
    assert client.pttl("virtual:k") == -2
    _at(clock, START - 3600)  # and back, as each schedule starts again at START
    assert _now_ms(client) == round((START - 3600) * 1000)
    client.close()


def test_the_server_can_keep_real_time_again(virtual_server: RedisServer) -> None:
    client = redis.Redis.from_url(virtual_server.url)
    clock = ServerClock(virtual_server.clock_file, client)
    clock.follow_real_time()
    assert abs(_now_ms(client) / 1000 - time.time()) < 1
    _at(clock, START)
    assert _now_ms(client) == round(START * 1000)
    client.close()
