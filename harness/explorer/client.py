"""A redis-py client whose every round trip is a scheduling point of the explorer.

Each command waits for its turn, then runs as usual, and its reply is written to the trace.
Pipelined commands are separate points, as they are on the server; a MULTI/EXEC block is one
point (Redis runs it atomically), and so is a script (EVAL/EVALSHA).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import redis
from redis.client import Pipeline

from harness.explorer.keys import real_now
from limiters.base import ServerNow

Point = Callable[[tuple[Any, ...]], None]
Log = Callable[[tuple[Any, ...], Any, float], None]  # command, reply, real instant it was sent


class ScheduledRedis(redis.Redis):
    """Loading a script changes no data: SCRIPT commands, and the EVALSHA that redis-py retries
    after loading a script the server did not have, go through without a point of their own."""

    point: Point
    log: Log
    retrying: set[Any]

    @classmethod
    def connect(cls, url: str, point: Point, log: Log) -> ScheduledRedis:
        client = cast(ScheduledRedis, cls.from_url(url))
        client.point, client.log, client.retrying = point, log, set()
        return client

    def execute_command(self, *args: Any, **options: Any) -> Any:
        name = str(args[0]).upper()
        if name.startswith("SCRIPT"):
            return super().execute_command(*args, **options)  # type: ignore[no-untyped-call]
        retry = name == "EVALSHA" and args[1] in self.retrying
        if retry:
            self.retrying.discard(args[1])
        else:
            self.point(args)
        args = fresh(args)
        sent = real_now()
        try:
            reply = super().execute_command(*args, **options)  # type: ignore[no-untyped-call]
        except redis.exceptions.NoScriptError:
            self.retrying.add(args[1])
            raise
        except redis.ResponseError as error:
            self.log(args, error, sent)
            raise
        self.log(args, reply, sent)
        return reply

    def pipeline(self, transaction: bool = True, shard_hint: Any = None) -> Pipeline:
        return ScheduledPipeline(self, transaction, shard_hint)


def fresh(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """The command as sent now: a server-time script's ``now`` is read when it reaches Redis."""
    return tuple(arg.fresh() if isinstance(arg, ServerNow) else arg for arg in args)


class ScheduledPipeline(Pipeline):
    def __init__(self, parent: ScheduledRedis, transaction: bool, shard_hint: Any) -> None:
        super().__init__(parent.connection_pool, parent.response_callbacks, transaction, shard_hint)
        self.parent = parent
        self.atomic = transaction

    def immediate_execute_command(self, *args: Any, **options: Any) -> Any:
        """WATCH and the reads before MULTI run at once: each is a point."""
        self.parent.point(args)
        sent = real_now()
        reply = super().immediate_execute_command(*args, **options)  # type: ignore[no-untyped-call]
        self.parent.log(args, reply, sent)
        return reply

    def execute(self, raise_on_error: bool = True) -> list[Any]:
        stack = [(args, options) for args, options in self.command_stack]
        if self.atomic or self.explicit_transaction:
            block = ("MULTI", *(" ".join(map(str, args)) for args, _ in stack), "EXEC")
            self.parent.point(block)
            sent = real_now()
            try:
                replies = super().execute(raise_on_error)
            except redis.WatchError:  # a watched key changed: EXEC ran nothing
                self.parent.log(block, "nil (a watched key changed)", sent)
                raise
            self.parent.log(block, replies, sent)
            return replies
        self.reset()
        return [self.parent.execute_command(*args, **options) for args, options in stack]
