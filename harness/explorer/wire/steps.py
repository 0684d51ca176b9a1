"""What one scheduling point is, seen as the bytes of one connection: the scheduling proxy's
(``proxy``) counterpart of the thread explorer's ``intercept.plan``.

``Sorter.sort`` takes a connection's commands in the order the program sent them and says of
each whether it is a point (held until the explorer lets it go) or passes (forwarded at once,
or as soon as what was sent before it on the connection has gone). As in ``intercept``:

- an ordinary command is a point (Redis runs each atomically), and so is each command of a
  pipeline, one by one: several commands in one write are several points, in order;
- a MULTI ... EXEC block is one point, at its EXEC: MULTI and the commands it queues pass (Redis
  queues them and changes nothing until EXEC), so a client that reads each QUEUED before
  sending the next command works too; the point shows the whole block. DISCARD (or RESET) ends
  the block, which was then no point at all;
- a script (EVAL, EVALSHA, FCALL and their _RO forms) is one point; one sent again after the
  server answered NOSCRIPT passes, since the failed one was the point (``Sorter.answered``);
- the commands of ``PASSES`` touch no data: they pass, wherever they come;
- (un)subscribing: on RESP3 the confirmations come as push messages, so the command passes and
  owes no reply; on RESP2 (and MONITOR on either) the connection leaves request and reply for
  good: from there on it is forwarded as it is, both ways (``Command.raw``). A RESP2 subscriber
  may send nothing else that touches data.
"""

from __future__ import annotations

from dataclasses import dataclass

from ratelimit_harness.harness.explorer.wire.intercept import SCRIPTS
from ratelimit_harness.harness.explorer.wire.resp import command_args

# command, or "COMMAND SUBCOMMAND" -> why it is no scheduling point
PASSES = {
    "HELLO": "the handshake: which protocol, which client",
    "AUTH": "authenticates the connection",
    "CLIENT": "the connection's own settings and the server's list of clients",
    "SELECT": "picks the connection's database",
    "PING": "touches no data",
    "ECHO": "touches no data",
    "SCRIPT LOAD": "caches a script in the server; runs nothing",
    "SCRIPT EXISTS": "asks which scripts are cached",
    "COMMAND": "describes the server's commands",
    "INFO": "the server's figures (a client's ready check)",
    "READONLY": "a cluster connection's read mode",
    "READWRITE": "a cluster connection's read mode",
    "QUIT": "closes the connection",
    "UNWATCH": "forgets the watched keys; changes no data (as in wire.NO_POINT)",
}
SUBSCRIBING = {
    "SUBSCRIBE",
    "PSUBSCRIBE",
    "SSUBSCRIBE",
    "UNSUBSCRIBE",
    "PUNSUBSCRIBE",
    "SUNSUBSCRIBE",
}
ENDS_BLOCK = {"DISCARD", "RESET"}  # inside MULTI: the block is dropped, nothing ran


@dataclass(frozen=True)
class Command:
    """One command as sent (``frame``: its exact bytes) and what it is."""

    frame: bytes
    args: tuple[bytes, ...]
    point: bool = True
    block: tuple[tuple[bytes, ...], ...] = ()  # an EXEC point: MULTI, what it queued, EXEC
    replies: int = 1  # replies the server sends for it (RESP3 subscriptions: none, all pushes)
    raw: bool = False  # from this command on, the connection is forwarded as it is

    @property
    def name(self) -> str:
        return _name(self.args)

    @property
    def held(self) -> tuple[tuple[bytes, ...], ...]:
        """What a point holds: the command, or its whole MULTI block."""
        return self.block or (self.args,)


class Sorter:
    """One connection's commands, sorted into points and passes in the order they were sent."""

    def __init__(self) -> None:
        self._queued: list[tuple[bytes, ...]] | None = None  # inside MULTI: what it queued
        self._resp3 = False
        self._resp3_before_hello = False
        self._resend = False  # the server answered NOSCRIPT: the next script is sent again

    def sort(self, frame: bytes) -> Command:
        args = command_args(frame)
        name = _name(args)
        if not args:  # Redis ignores an empty command and answers nothing
            return Command(frame, args, point=False, replies=0)
        if self._queued is not None or name == "MULTI":
            return self._in_block(frame, args, name)
        if name in SCRIPTS and self._resend:
            self._resend = False
            return Command(frame, args, point=False)
        return self._alone(frame, args, name)

    def _in_block(self, frame: bytes, args: tuple[bytes, ...], name: str) -> Command:
        if self._queued is None:  # MULTI
            self._queued = []
        elif name == "EXEC":
            block, self._queued = ((b"MULTI",), *self._queued, args), None
            return Command(frame, args, block=block)
        elif name in ENDS_BLOCK:
            self._queued = None
        elif name != "MULTI":  # a nested MULTI is refused, not queued
            self._queued.append(args)
        return Command(frame, args, point=False)

    def _alone(self, frame: bytes, args: tuple[bytes, ...], name: str) -> Command:
        if name == "HELLO" and len(args) > 1:
            self._resp3_before_hello, self._resp3 = self._resp3, args[1] == b"3"
        if name in PASSES or f"{name} {_name(args[1:2])}" in PASSES:
            return Command(frame, args, point=False)
        if name in SUBSCRIBING and self._resp3:  # the confirmations come as pushes
            return Command(frame, args, point=False, replies=0)
        if name in SUBSCRIBING or name == "MONITOR":
            return Command(frame, args, point=False, raw=True)
        return Command(frame, args)

    def answered(self, command: Command, reply: bytes) -> None:
        """``reply`` (its exact bytes) answered ``command``: what it changes for the next ones."""
        if reply.startswith(b"-NOSCRIPT"):
            self._resend = True
        elif command.name == "HELLO" and reply[:1] in (b"-", b"!"):  # the protocol stays
            self._resp3 = self._resp3_before_hello


def _name(args: tuple[bytes, ...]) -> str:
    return args[0].decode(errors="replace").upper() if args else ""
