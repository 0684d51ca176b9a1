"""Every command a limiter sends, caught where it leaves: at the connection, whichever client.

While ``intercepted()`` is active, redis-py's (and valkey-py's) connections route each command
through here before it is written to the socket. What happens depends on the sending thread:

- an app instance's thread (``gated``): the command is a scheduling point. The thread waits for
  the explorer's turn (``Gate.point``), sends, and its reply is logged (``Gate.log``). This holds
  for the client the limiter was given, a client it built on that pool or from the URL, its
  pipelines, scripts and transactions.
- the explorer's own thread (the one that entered ``intercepted``): passes, unseen.
- any other thread (one the limiter started: a leak thread, a refresher): passes unscheduled,
  and is logged as such (``unscheduled``), so the trace shows it and a run never waits on it.

Why the connection and not a proxy in front of Redis: a proxy sees bytes, not threads, so it
could not tell a limiter's own background thread from the request it serves; here the sending
thread is known. The cost is that only clients built on redis-py's or valkey-py's connection
classes are seen; the README says so.

What is one point: a command (Redis runs each atomically); a MULTI ... EXEC block, at its EXEC
(queued commands change nothing until then); a pipeline's commands one by one, each sent once
the one before it has run. Commands that change no data (``NO_POINT``) pass within the step, as
does a script sent again after the server answered NOSCRIPT (the failed one was the point).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import redis

from harness.explorer.keys import real_now, text
from limiters.base import ServerNow

NO_POINT = {
    "PING",
    "ECHO",
    "AUTH",
    "HELLO",
    "SELECT",
    "CLIENT",
    "SCRIPT",
    "COMMAND",
    "QUIT",
    "UNWATCH",
}
SCRIPTS = {"EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL", "FCALL_RO"}


class Gate(Protocol):
    """An app instance, as the connection sees it."""

    def point(self, command: tuple[Any, ...]) -> None:
        """Wait for the explorer's turn to send ``command`` (may raise to stop the thread)."""

    def log(self, command: tuple[Any, ...], reply: Any, sent: float) -> None:
        """``command`` was answered ``reply`` (an exception for an error reply)."""


Unscheduled = Callable[[str, tuple[Any, ...], Any], None]  # thread name, command, reply
Ended = Callable[[str, BaseException], None]  # thread name, what it raised


@dataclass
class _Sent:
    """A command written to the connection whose reply is not read yet."""

    command: tuple[Any, ...] | None  # None: not logged (it changes nothing, or is queued)
    gate: Gate | None  # None: sent by a thread the explorer does not schedule
    sent: float = 0.0


@dataclass
class _Wire:
    """What one connection has sent and not yet been answered."""

    owed: deque[_Sent] = field(default_factory=deque)
    early: deque[Any] = field(default_factory=deque)  # replies read ahead of the caller
    queued: list[tuple[Any, ...]] | None = None  # inside MULTI: the commands queued
    resend: bool = False  # the server answered NOSCRIPT: the script comes again


class _Local(threading.local):
    gate: Gate | None = None
    packing: bool = False  # inside send_command: its packed bytes are already handled
    aside: bool = False  # the harness's own commands, in a thread whose others are watched


_local = _Local()
_quiet: set[int] = set()  # threads whose commands pass unseen (the explorer's)
_sink: list[Unscheduled] = []  # where unscheduled commands are logged (the current run)
_ended: list[Ended] = []  # where the end of such a thread on an exception is told
_strays: set[int] = set()  # the threads that have sent unscheduled commands


def unscheduled_to(sink: Unscheduled | None, ended: Ended | None) -> None:
    """From now on, log the commands of threads nobody schedules to ``sink``, and tell
    ``ended`` when one of them ends on an exception (instead of printing its traceback);
    None: drop them."""
    _sink[:] = [sink] if sink else []
    _ended[:] = [ended] if ended else []


class Retired(redis.ConnectionError):
    """A client of a run that is over was used (by a thread the limiter left running)."""


def retire(client: redis.Redis) -> None:
    """Close a client whose run is over, for good: a thread the limiter started and left
    running gets ``Retired`` from it from now on (and most such threads then end, silently),
    instead of a new connection that would keep it sending commands into later runs."""

    def refuse(*args: Any, **options: Any) -> Any:
        time.sleep(0.01)  # a thread that retries at once on any error spins 100 times a second
        raise Retired("the explorer's run that this client served is over")

    client.connection_pool.get_connection = refuse  # type: ignore[method-assign]
    client.close()


@contextlib.contextmanager
def gated(gate: Gate) -> Iterator[None]:
    """In an instance's thread: its commands are points of ``gate``."""
    _local.gate = gate
    try:
        yield
    finally:
        _local.gate = None


@contextlib.contextmanager
def intercepted() -> Iterator[None]:
    """Route the commands of every redis-py and valkey-py connection through here."""
    patches = [(cls, name, getattr(cls, name)) for cls in _classes() for name in _METHODS]
    _quiet.add(threading.get_ident())
    if not getattr(threading.excepthook, "ours", False):  # for good: see _thread_ended
        threading.excepthook = _thread_ended(threading.excepthook)
    try:
        for cls, name, original in patches:
            setattr(cls, name, _METHODS[name](original))
        yield
    finally:
        for cls, name, original in patches:
            setattr(cls, name, original)
        _quiet.discard(threading.get_ident())
        _sink.clear()
        _ended.clear()


def _thread_ended(hook: Callable[[Any], object]) -> Callable[[Any], None]:
    """A thread ended on an exception. One a limiter started, during a run: the run is told,
    nothing printed. One that sent unscheduled commands and outlived its run (its client was
    retired under it, perhaps after the explorer is done): nothing. Any other: ``hook``, as
    before. Installed once, for good, since such a thread may end at any time later."""

    def ended(args: Any) -> None:
        ident = getattr(args.thread, "ident", None)
        if _ended and ident not in _quiet and args.exc_value is not None:
            _ended[0](getattr(args.thread, "name", "a thread"), args.exc_value)
        elif ident not in _strays and not isinstance(args.exc_value, Retired):
            hook(args)

    ended.ours = True  # type: ignore[attr-defined]
    return ended


def _classes() -> list[type]:
    classes: list[type] = [redis.connection.AbstractConnection]
    with contextlib.suppress(ImportError):
        import valkey.connection

        classes.append(valkey.connection.AbstractConnection)
    return classes


@contextlib.contextmanager
def aside() -> Iterator[None]:
    """The harness's own commands, sent from an instance's thread (after each of its
    commands, say): they pass unseen."""
    before, _local.aside = _local.aside, True
    try:
        yield
    finally:
        _local.aside = before


def _watched() -> bool:
    """Whether the calling thread's commands are seen at all."""
    if _local.aside:
        return False
    return _local.gate is not None or threading.get_ident() not in _quiet


def _wire(connection: Any) -> _Wire:
    wire: _Wire = connection.__dict__.setdefault("_harness_wire", _Wire())
    return wire


def _send_command(original: Callable[..., Any]) -> Callable[..., Any]:
    """One command: its point comes before it is packed, so that a server-time script's
    ``now`` is read when it is sent (see ``ServerNow``)."""

    def send_command(self: Any, *args: Any, **options: Any) -> Any:
        if not _watched() or _local.packing:
            return original(self, *args, **options)
        args = _before(self, _split_name(args))
        _local.packing = True
        try:
            return original(self, *args, **options)
        finally:
            _local.packing = False

    return send_command


def _send_packed_command(original: Callable[..., Any]) -> Callable[..., Any]:
    """Commands packed by the caller (a pipeline): each one its own point, in order."""

    def send_packed_command(self: Any, command: Any, check_health: bool = True) -> Any:
        if not _watched() or _local.packing:
            return original(self, command, check_health)
        packed = command.encode() if isinstance(command, str) else command
        data = packed if isinstance(packed, bytes) else b"".join(map(bytes, packed))
        for n, (raw, args) in enumerate(split_packed(data)):
            _before(self, args)
            original(self, [raw], check_health and n == 0)
        return None

    return send_packed_command


def _read_response(original: Callable[..., Any]) -> Callable[..., Any]:
    def read_response(self: Any, *args: Any, **options: Any) -> Any:
        wire = self.__dict__.get("_harness_wire")
        if wire is None or not (wire.owed or wire.early):
            return original(self, *args, **options)
        if wire.early:
            reply = wire.early.popleft()
        else:
            reply = _read(original, self, wire, *args, **options)
        if isinstance(reply, redis.ResponseError):
            raise reply
        return reply

    read_response.original = original  # type: ignore[attr-defined]
    return read_response


def _disconnect(original: Callable[..., Any]) -> Callable[..., Any]:
    def disconnect(self: Any, *args: Any, **options: Any) -> Any:
        self.__dict__.pop("_harness_wire", None)  # what was owed will never come
        return original(self, *args, **options)

    return disconnect


_METHODS = {
    "send_command": _send_command,
    "send_packed_command": _send_packed_command,
    "read_response": _read_response,
    "disconnect": _disconnect,
}


def _before(connection: Any, args: tuple[Any, ...]) -> tuple[Any, ...]:
    """Just before ``args`` is written: wait for the turn if it is a point, and note what its
    reply will be logged as. Returns the command as it is sent now (see ``fresh``)."""
    wire, gate = _wire(connection), _local.gate
    name = text(args[0]).upper() if args else ""
    logged: tuple[Any, ...] | None = args
    point = True
    if wire.queued is not None:  # inside MULTI
        if name == "EXEC":
            logged = ("MULTI", *(" ".join(map(text, queued)) for queued in wire.queued), "EXEC")
            wire.queued = None
        else:
            point, logged = False, None
            wire.queued = None if name == "DISCARD" else [*wire.queued, args]
    elif name == "MULTI":
        point, logged, wire.queued = False, None, []
    elif name in NO_POINT:
        point, logged = False, None
    elif wire.resend and name in SCRIPTS:
        point, wire.resend = False, False
    if gate is None:
        _strays.add(threading.get_ident())
    if point and gate is not None:
        read = type(connection).read_response.original
        while wire.owed:  # what was sent before must have run before this may go
            wire.early.append(_read(read, connection, wire))
        gate.point(logged or args)
    sent = fresh(args)
    wire.owed.append(_Sent(sent if logged is args else logged, gate, real_now()))
    return sent


def fresh(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """The command as sent now: a server-time script's ``now`` is read when it reaches Redis."""
    if not any(isinstance(arg, ServerNow) for arg in args):
        return args
    return tuple(arg.fresh() if isinstance(arg, ServerNow) else arg for arg in args)


def _read(original: Callable[..., Any], connection: Any, wire: _Wire, *a: Any, **k: Any) -> Any:
    """Read the reply owed for the oldest command sent, and log it."""
    try:
        reply = original(connection, *a, **k)
    except redis.ResponseError as error:
        reply = error
    sent = wire.owed.popleft()
    if isinstance(reply, redis.exceptions.NoScriptError):
        wire.resend = True
    elif sent.command is not None:
        shown = "nil (a watched key changed)" if _aborted(sent.command, reply) else reply
        if sent.gate is not None:
            sent.gate.log(sent.command, shown, sent.sent)
        elif _sink:
            _sink[0](threading.current_thread().name, sent.command, shown)
    return reply


def _aborted(command: tuple[Any, ...], reply: Any) -> bool:
    return reply is None and text(command[-1]).upper() == "EXEC"


def _split_name(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """redis-py sends ``"SCRIPT LOAD"`` as one argument and splits it when packing."""
    if args and isinstance(args[0], str) and " " in args[0]:
        return (*args[0].split(), *args[1:])
    return args


def split_packed(data: bytes) -> list[tuple[bytes, tuple[bytes, ...]]]:
    """RESP-encoded commands (arrays of bulk strings, as clients send them) -> each command's
    bytes and arguments."""
    commands, at = [], 0
    while at < len(data):
        start = at
        if data[at : at + 1] != b"*":
            raise ValueError(f"not a RESP array at byte {at}: {data[at : at + 20]!r}")
        end = data.index(b"\r\n", at)
        count, at = int(data[at + 1 : end]), end + 2
        args = []
        for _ in range(count):
            end = data.index(b"\r\n", at)
            size = int(data[at + 1 : end])
            args.append(data[end + 2 : end + 2 + size])
            at = end + 2 + size + 2
        commands.append((data[start:at], tuple(args)))
    return commands
