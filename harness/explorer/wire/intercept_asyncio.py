"""The asyncio connections of redis-py and valkey-py (``redis.asyncio``, ``valkey.asyncio``),
caught as ``intercept`` catches the synchronous ones, with the same notion of one point: a command,
a MULTI ... EXEC block at its EXEC, a pipeline's commands one by one (each sent once the one
before it has run: the replies owed are read ahead), a script sent again after NOSCRIPT within
the step of the one that failed.

The library's methods are coroutines here, and so are these; only the wait for the explorer's
turn (``Gate.point``) blocks, and it blocks the instance's own event loop, which serves that
instance alone (see ``limiters.plugin``), so nothing else waits on it.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import Callable
from typing import Any

from ratelimit_harness.harness.explorer.wire import intercept
from ratelimit_harness.harness.explorer.wire.resp import packed_commands

# the asyncio connections that have sent a watched command, to close when their loop's run
# ends (see ``disconnect_on``)
_opened: weakref.WeakSet[Any] = weakref.WeakSet()


def classes() -> list[type]:
    found: list[type] = []
    with contextlib.suppress(ImportError):
        import redis.asyncio.connection

        found.append(redis.asyncio.connection.AbstractConnection)
    with contextlib.suppress(ImportError):
        import valkey.asyncio.connection

        found.append(valkey.asyncio.connection.AbstractConnection)
    return found


def disconnect_on(loop: asyncio.AbstractEventLoop) -> None:
    """Close every asyncio connection that sent a watched command on ``loop`` (an instance's,
    not running now), so none is left open when the loop closes."""
    for connection in list(_opened):
        if connection.__dict__.get("_harness_loop") is loop:
            loop.run_until_complete(connection.disconnect(nowait=True))


def _socket_name(connection: Any) -> Any:
    writer = getattr(connection, "_writer", None)
    return writer.get_extra_info("sockname") if writer is not None else None


async def _before(connection: Any, args: tuple[Any, ...]) -> tuple[Any, ...]:
    """``intercept._before``, reading what is owed without blocking the loop."""
    if "_harness_loop" not in connection.__dict__:
        connection.__dict__["_harness_loop"] = asyncio.get_running_loop()
        _opened.add(connection)
    held, gate, point, logged = intercept.plan(connection, args)
    if point and gate is not None:
        read = type(connection).read_response.original
        while held.owed:  # what was sent before must have run before this may go
            held.early.append(await _read(read, connection, held))
        turn = gate.point(logged or args)
        if turn is not None:  # a task's point: it waits on its own loop (see background)
            await turn
    return intercept.owe(held, gate, args, logged)


async def _read(
    original: Callable[..., Any], connection: Any, held: intercept.Wire, *a: Any, **k: Any
) -> Any:
    try:
        reply = await original(connection, *a, **k)
    except intercept.ERRORS as error:
        reply = error
    return intercept.reply_read(held, reply)


def _send_command(original: Callable[..., Any]) -> Callable[..., Any]:
    async def send_command(self: Any, *args: Any, **options: Any) -> Any:
        if not intercept.watched():
            return await original(self, *args, **options)
        args = await _before(self, intercept.split_name(args))
        with intercept.packing():
            return await original(self, *args, **options)

    return send_command


def _send_packed_command(original: Callable[..., Any]) -> Callable[..., Any]:
    async def send_packed_command(self: Any, command: Any, check_health: bool = True) -> Any:
        intercept.note_address(self, _socket_name)
        if not intercept.watched():
            await original(self, command, check_health)
        else:
            for n, (raw, args) in enumerate(packed_commands(intercept.joined(command))):
                await _before(self, args)
                await original(self, [raw], check_health and n == 0)
        intercept.note_address(self, _socket_name)

    return send_packed_command


def _read_response(original: Callable[..., Any]) -> Callable[..., Any]:
    async def read_response(self: Any, *args: Any, **options: Any) -> Any:
        held = self.__dict__.get("_harness_wire")
        if held is None or not (held.owed or held.early):
            return await original(self, *args, **options)
        if held.early:
            reply = held.early.popleft()
        else:
            reply = await _read(original, self, held, *args, **options)
        if isinstance(reply, intercept.ERRORS):
            raise reply
        return reply

    read_response.original = original  # type: ignore[attr-defined]
    return read_response


def _disconnect(original: Callable[..., Any]) -> Callable[..., Any]:
    async def disconnect(self: Any, *args: Any, **options: Any) -> Any:
        intercept.disconnected(self)
        return await original(self, *args, **options)

    return disconnect


METHODS = {
    "send_command": _send_command,
    "send_packed_command": _send_packed_command,
    "read_response": _read_response,
    "disconnect": _disconnect,
}


def tables() -> list[tuple[type, dict[str, Any]]]:
    """The asyncio connection classes, each with the stand-ins of its methods, for
    ``intercept.intercepted``."""
    return [(cls, METHODS) for cls in classes()]
