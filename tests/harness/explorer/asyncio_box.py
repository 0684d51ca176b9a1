"""Plug-in limiters on ``redis.asyncio``, as FastAPI services write them, each beside its
synchronous twin where the explorer's verdict must be the same; and one that talks RESP over a
plain socket, a client the explorer cannot see. Each is ``factory(client, policy)``; an
``async def`` factory is given a ``redis.asyncio.Redis``."""

from __future__ import annotations

import asyncio
import socket
import time
from typing import Any

import redis

from ratelimit_harness.limiters import Policy
from tests.harness.explorer.black_box import SERVER_TIME_WINDOW, _window_ms


def _key(identity: str) -> str:
    return f"app:aio:{{{identity}}}"


async def get_then_set(client: Any, policy: Policy) -> Any:
    """Broken: reads the count, then writes it back one higher (two round trips)."""
    limit, window = int(policy.limit or 1), _window_ms(policy)

    async def check(identity: str) -> bool:
        count = int(await client.get(_key(identity)) or 0)
        if count >= limit:
            return False
        await client.set(_key(identity), count + 1, px=window)
        return True

    return check


def _own_get_then_set(connect: Any, policy: Policy) -> Any:
    """GET then SET on an asyncio client ``connect()`` builds at the first check."""
    made: list[Any] = []
    limit, window = int(policy.limit or 1), _window_ms(policy)

    async def check(identity: str) -> bool:
        made[:] = made or [connect()]
        count = int(await made[0].get(_key(identity)) or 0)
        if count >= limit:
            return False
        await made[0].set(_key(identity), count + 1, px=window)
        return True

    return check


def own_redis_asyncio(client: Any, policy: Policy) -> Any:
    """Broken as ``get_then_set``: a plain factory whose async check builds its own
    ``redis.asyncio`` client from the server's address."""
    import redis.asyncio

    kwargs = client.connection_pool.connection_kwargs
    return _own_get_then_set(lambda: redis.asyncio.Redis(**_address(kwargs)), policy)


def own_valkey_asyncio(client: Any, policy: Policy) -> Any:
    """The same on ``valkey.asyncio``."""
    import valkey.asyncio

    kwargs = client.connection_pool.connection_kwargs
    return _own_get_then_set(lambda: valkey.asyncio.Valkey(**_address(kwargs)), policy)


def _address(kwargs: dict[str, Any]) -> dict[str, Any]:
    return {"host": kwargs["host"], "port": kwargs["port"]}


async def atomic_lua(client: Any, policy: Policy) -> Any:
    """Correct: one script on the server's clock, run with ``await``."""
    script = client.register_script(SERVER_TIME_WINDOW)
    limit, window = int(policy.limit or 1), _window_ms(policy)

    async def check(identity: str) -> bool:
        return bool(await script(args=[identity, limit, window]))

    return check


async def with_a_task_of_its_own(client: Any, policy: Policy) -> Any:
    """``atomic_lua``, and a task started while it is built that reads the server's clock now
    and then (a clock sync, a health check), as some async libraries do."""

    async def keep_alive() -> None:
        while True:
            await client.time()
            await asyncio.sleep(0.001)

    asyncio.get_running_loop().create_task(keep_alive(), name="keep-alive")
    return await atomic_lua(client, policy)


def _pipelined(client: Any, policy: Policy, identity: str) -> Any:
    """INCR and PEXPIRE in one pipeline without MULTI: the server runs them one by one."""
    pipe = client.pipeline(transaction=False)
    pipe.incr(_key(identity))
    pipe.pexpire(_key(identity), _window_ms(policy))
    return pipe


def pipeline_sync(client: Any, policy: Policy) -> Any:
    """Broken (a crash between the two commands leaves a key with no TTL)."""
    return lambda identity: _pipelined(client, policy, identity).execute()[0] <= policy.limit


async def pipeline_async(client: Any, policy: Policy) -> Any:
    """``pipeline_sync`` on ``redis.asyncio``."""

    async def check(identity: str) -> bool:
        return bool((await _pipelined(client, policy, identity).execute())[0] <= policy.limit)

    return check


def _window_key(identity: str, policy: Policy) -> str:
    return f"app:tx:{{{identity}}}:{int(time.time() // float(policy.window or 1))}"


async def watch_multi_async(client: Any, policy: Policy) -> Any:
    """``black_box.watch_multi_client_clock`` on ``redis.asyncio``: correct while the app
    servers' clocks agree."""
    window = max(1, int(policy.window or 1))

    async def check(identity: str) -> bool:
        key = _window_key(identity, policy)
        while True:
            async with client.pipeline() as pipe:
                try:
                    await pipe.watch(key)
                    count = int(await pipe.get(key) or 0)
                    if count >= (policy.limit or 0):
                        await pipe.unwatch()
                        return False
                    pipe.multi()
                    pipe.incr(key)
                    pipe.expire(key, window)
                    await pipe.execute()
                    return True
                except redis.WatchError:
                    continue

    return check


def _resp(*args: str | int) -> bytes:
    parts = [f"*{len(args)}\r\n".encode()]
    for arg in map(str, args):
        parts.append(f"${len(arg.encode())}\r\n{arg}\r\n".encode())
    return b"".join(parts)


def raw_socket(client: Any, policy: Policy) -> Any:
    """Correct: ``black_box.server_time_window``'s script, sent as EVAL over a plain socket of
    its own (RESP by hand, one connection per check): nothing the explorer sees."""
    kwargs = client.connection_pool.connection_kwargs
    limit, window = int(policy.limit or 1), _window_ms(policy)

    def check(identity: str) -> bool:
        with socket.create_connection((kwargs["host"], kwargs["port"]), timeout=5) as sock:
            sock.sendall(_resp("EVAL", SERVER_TIME_WINDOW, 0, identity, limit, window))
            return sock.makefile("rb").readline() == b":1\r\n"

    return check
