"""Every command a limiter sends, caught where it leaves: at the connection, whichever client.

While ``intercepted()`` is active, redis-py's (and valkey-py's) connections, synchronous and
asyncio alike (``intercept_asyncio``), route each command through here before it is written to the
socket. What happens depends on who sends it:

- an app instance (``gated``: its thread, and the asyncio tasks of its event loop made while it
  serves a request): the command is a scheduling point. The instance waits for the explorer's
  turn (``Gate.point``; an asyncio instance blocks its own loop, which nothing else uses), sends,
  and its reply is logged (``Gate.log``). This holds for the client the limiter was given, a
  client it built on that pool or from the URL, its pipelines, scripts and transactions.
- the explorer's own thread (the one that entered ``intercepted``): passes, unseen.
- a thread the limiter started in an instance's thread or while it was built (a leak thread, a
  refresher), or an asyncio task its async factory started: an actor of that instance (see
  background), gated as the instance is. A task's gate does not block: its connection awaits
  the turn the gate returns.
- anyone else (a thread started before the search): passes unscheduled, and is logged as such
  (``unscheduled``), so the trace shows it and a run never waits on it.

Who is gated is a context variable, not a thread-local: a thread's own context for threads, and
for asyncio the context each task copies when it is made, so a task a request spawns (a
``gather``) is that request's, and one the factory made is its actor's.

What the wire keeps between calls (which threads pass unseen, where its connections connect
from, where the current run wants unscheduled commands) is one object, ``STATE``.

Why the connection and not a proxy in front of Redis: a proxy sees bytes, not threads, so it
could not tell a limiter's own background thread from the request it serves; here the sending
thread is known. The cost is that only clients built on redis-py's or valkey-py's connection
classes are seen; docs/explorer.md says so, and ``addresses`` lets a run count the commands that
reached the server by any other client (see ``unseen``).

What is one point: a command (Redis runs each atomically); a MULTI ... EXEC block, at its EXEC
(queued commands change nothing until then); a pipeline's commands one by one, each sent once
the one before it has run. Commands that change no data (``NO_POINT``) pass within the step, as
does a script sent again after the server answered NOSCRIPT (the failed one was the point).
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import redis

from ratelimit_harness.harness.explorer.server.keys import real_now, text
from ratelimit_harness.harness.explorer.wire.resp import packed_commands
from ratelimit_harness.limiters.base import ServerNow

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


def _libraries() -> list[Any]:
    """redis-py, and valkey-py where it is installed: the libraries whose connections are seen."""
    found: list[Any] = [redis]
    with contextlib.suppress(ImportError):
        import valkey

        found.append(valkey)
    return found


ERRORS = tuple(library.ResponseError for library in _libraries())  # an error reply
NOSCRIPT = tuple(library.exceptions.NoScriptError for library in _libraries())


class Gate(Protocol):
    """An app instance, as the connection sees it."""

    def point(self, command: tuple[Any, ...]) -> Awaitable[None] | None:
        """Wait for the explorer's turn to send ``command`` (may raise to stop the thread); an
        asyncio task's gate returns what its connection awaits instead (see background)."""

    def log(self, command: tuple[Any, ...], reply: Any, sent: float) -> None:
        """``command`` was answered ``reply`` (an exception for an error reply)."""


Unscheduled = Callable[[str, tuple[Any, ...], Any], None]  # thread name, command, reply
Ended = Callable[[str, BaseException], None]  # thread name, what it raised
Wrap = Callable[[Callable[..., Any]], Callable[..., Any]]  # a method's original -> its stand-in


@dataclass
class _Sent:
    """A command written to the connection whose reply is not read yet."""

    command: tuple[Any, ...] | None  # None: not logged (it changes nothing, or is queued)
    gate: Gate | None  # None: sent by a thread the explorer does not schedule
    sent: float = 0.0


@dataclass
class Wire:
    """What one connection has sent and not yet been answered."""

    owed: deque[_Sent] = field(default_factory=deque)
    early: deque[Any] = field(default_factory=deque)  # replies read ahead of the caller
    queued: list[tuple[Any, ...]] | None = None  # inside MULTI: the commands queued
    resend: bool = False  # the server answered NOSCRIPT: the script comes again


_gate: contextvars.ContextVar[Gate | None] = contextvars.ContextVar("gate", default=None)
# inside send_command: its packed bytes are already handled
_packing = contextvars.ContextVar("packing", default=False)
# the harness's own commands, where the others are watched
_aside = contextvars.ContextVar("aside", default=False)


@dataclass
class _State:
    """What the wire keeps from one call to the next, in one object. There is one per process
    (``STATE``): one search runs at a time, inside one ``intercepted``."""

    # threads whose commands pass unseen: the explorer's own
    unseen_threads: set[int] = field(default_factory=set)
    # where every connection that went through here connects from ("host:port"): those open
    # now, and those closed since ``forget_closed``
    open_addresses: set[str] = field(default_factory=set)
    closed_addresses: set[str] = field(default_factory=set)
    # the current run's: where commands nobody schedules are logged, and where the end of such a
    # thread on an exception is told (None: nobody listens)
    unscheduled: Unscheduled | None = None
    ended: Ended | None = None
    stray_threads: set[int] = field(default_factory=set)  # threads that sent such commands

    def connected(self, address: str) -> None:
        self.open_addresses.add(address)

    def disconnected(self, address: str) -> None:
        self.open_addresses.discard(address)
        self.closed_addresses.add(address)


STATE = _State()


def unscheduled_to(sink: Unscheduled | None, ended: Ended | None) -> None:
    """From now on, log the commands of threads nobody schedules to ``sink``, and tell
    ``ended`` when one of them ends on an exception (instead of printing its traceback);
    None: drop them."""
    STATE.unscheduled, STATE.ended = sink, ended


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


def addresses() -> set[str]:
    """Where the connections that went through here connect from, as a server names its
    clients ("host:port"): those still open, and those closed since ``forget_closed``."""
    return STATE.open_addresses | STATE.closed_addresses


def forget_closed() -> None:
    """From now on, ``addresses`` leaves out the connections closed so far (their ports may be
    another client's next)."""
    STATE.closed_addresses.clear()


@contextlib.contextmanager
def gated(gate: Gate) -> Iterator[None]:
    """In an instance's thread: its commands (and those of the asyncio tasks made there from
    now on) are points of ``gate``."""
    token = _gate.set(gate)
    try:
        yield
    finally:
        _gate.reset(token)


def gate_to(gate: Gate) -> None:
    """Run in a context an asyncio task is about to be made with: its commands are points of
    ``gate`` (see background's TaskActor)."""
    _gate.set(gate)


@contextlib.contextmanager
def intercepted(*more: tuple[type, Mapping[str, Wrap]]) -> Iterator[None]:
    """Route the commands of every redis-py and valkey-py connection through here; ``more``:
    other connection classes, each with the wrappers of its methods (``intercept_asyncio``'s)."""
    tables = [*((cls, _METHODS) for cls in _classes()), *more]
    patches = [(cls, name, getattr(cls, name), w) for cls, t in tables for name, w in t.items()]
    STATE.unseen_threads.add(threading.get_ident())
    if not getattr(threading.excepthook, "ours", False):  # for good: see _thread_ended
        threading.excepthook = _thread_ended(threading.excepthook)
    try:
        for cls, name, original, wrap in patches:
            setattr(cls, name, wrap(original))
        yield
    finally:
        for cls, name, original, _ in patches:
            setattr(cls, name, original)
        STATE.unseen_threads.discard(threading.get_ident())
        unscheduled_to(None, None)


def _thread_ended(hook: Callable[[Any], object]) -> Callable[[Any], None]:
    """A thread ended on an exception. One a limiter started, during a run: the run is told,
    nothing printed. One that sent unscheduled commands and outlived its run (its client was
    retired under it, perhaps after the explorer is done): nothing. Any other: ``hook``, as
    before. Installed once, for good, since such a thread may end at any time later."""

    def ended(args: Any) -> None:
        ident = getattr(args.thread, "ident", None)
        if STATE.ended and ident not in STATE.unseen_threads and args.exc_value is not None:
            STATE.ended(getattr(args.thread, "name", "a thread"), args.exc_value)
        elif ident not in STATE.stray_threads and not isinstance(args.exc_value, Retired):
            hook(args)

    ended.ours = True  # type: ignore[attr-defined]
    return ended


def _classes() -> list[type]:
    return [library.connection.AbstractConnection for library in _libraries()]


@contextlib.contextmanager
def aside() -> Iterator[None]:
    """The harness's own commands, sent from an instance's thread (after each of its
    commands, say): they pass unseen."""
    token = _aside.set(True)
    try:
        yield
    finally:
        _aside.reset(token)


def watched() -> bool:
    """Whether the caller's commands are seen at all (and not already handled: see
    ``packing``)."""
    if _aside.get() or _packing.get():
        return False
    return threading.get_ident() not in STATE.unseen_threads


@contextlib.contextmanager
def packing() -> Iterator[None]:
    """Around the library's own send_command: the bytes it packs were handled already."""
    token = _packing.set(True)
    try:
        yield
    finally:
        _packing.reset(token)


def note_address(connection: Any, address: Callable[[Any], Any]) -> None:
    """Note where ``connection`` connects from (``address(connection)``: a socket's name, None
    while it has none), once: before it writes when it is connected (a thread of the limiter's
    own may write while a run counts what reached the server), else after."""
    if "_harness_address" not in connection.__dict__:
        name = address(connection)
        if name is None:
            return
        shown = f"{name[0]}:{name[1]}" if isinstance(name, tuple) else str(name)
        connection.__dict__["_harness_address"] = shown
        STATE.connected(shown)


def disconnected(connection: Any) -> None:
    """``connection`` disconnects: what was owed will never come, and its address is free."""
    connection.__dict__.pop("_harness_wire", None)
    shown = connection.__dict__.pop("_harness_address", None)
    if shown is not None:
        STATE.disconnected(shown)


def wire_of(connection: Any) -> Wire:
    wire: Wire = connection.__dict__.setdefault("_harness_wire", Wire())
    return wire


def _socket_name(connection: Any) -> Any:
    sock = getattr(connection, "_sock", None)
    return sock.getsockname() if sock is not None else None


def _send_command(original: Callable[..., Any]) -> Callable[..., Any]:
    """One command: its point comes before it is packed, so that a server-time script's
    ``now`` is read when it is sent (see ``ServerNow``)."""

    def send_command(self: Any, *args: Any, **options: Any) -> Any:
        if not watched():
            return original(self, *args, **options)
        args = _before(self, split_name(args))
        with packing():
            return original(self, *args, **options)

    return send_command


def _send_packed_command(original: Callable[..., Any]) -> Callable[..., Any]:
    """Commands packed by the caller (a pipeline): each one its own point, in order."""

    def send_packed_command(self: Any, command: Any, check_health: bool = True) -> Any:
        note_address(self, _socket_name)
        if not watched():
            original(self, command, check_health)
        else:
            for n, (raw, args) in enumerate(packed_commands(joined(command))):
                _before(self, args)
                original(self, [raw], check_health and n == 0)
        note_address(self, _socket_name)

    return send_packed_command


def joined(command: Any) -> bytes:
    """What a connection's send_packed_command is given (bytes, str or chunks), as bytes."""
    packed = command.encode() if isinstance(command, str) else command
    return packed if isinstance(packed, bytes) else b"".join(map(bytes, packed))


def _read_response(original: Callable[..., Any]) -> Callable[..., Any]:
    def read_response(self: Any, *args: Any, **options: Any) -> Any:
        wire = self.__dict__.get("_harness_wire")
        if wire is None or not (wire.owed or wire.early):
            return original(self, *args, **options)
        if wire.early:
            reply = wire.early.popleft()
        else:
            reply = _read(original, self, wire, *args, **options)
        if isinstance(reply, ERRORS):
            raise reply
        return reply

    read_response.original = original  # type: ignore[attr-defined]
    return read_response


def _disconnect(original: Callable[..., Any]) -> Callable[..., Any]:
    def disconnect(self: Any, *args: Any, **options: Any) -> Any:
        disconnected(self)
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
    wire, gate, point, logged = plan(connection, args)
    if point and gate is not None:
        read = type(connection).read_response.original
        while wire.owed:  # what was sent before must have run before this may go
            wire.early.append(_read(read, connection, wire))
        gate.point(logged or args)
    return owe(wire, gate, args, logged)


def plan(
    connection: Any, args: tuple[Any, ...]
) -> tuple[Wire, Gate | None, bool, tuple[Any, ...] | None]:
    """What ``args`` is, about to be written: its connection's wire, the gate it belongs to
    (None: nobody schedules it), whether it is a point, and what its reply is logged as (None:
    not logged)."""
    wire, gate = wire_of(connection), _gate.get()
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
        STATE.stray_threads.add(threading.get_ident())
    return wire, gate, point, logged


def owe(
    wire: Wire, gate: Gate | None, args: tuple[Any, ...], logged: tuple[Any, ...] | None
) -> tuple[Any, ...]:
    """``args`` is written now: its reply is owed. Returns it as sent (see ``fresh``)."""
    sent = fresh(args)
    wire.owed.append(_Sent(sent if logged is args else logged, gate, real_now()))
    return sent


def fresh(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """The command as sent now: a server-time script's ``now`` is read when it reaches Redis."""
    if not any(isinstance(arg, ServerNow) for arg in args):
        return args
    return tuple(arg.fresh() if isinstance(arg, ServerNow) else arg for arg in args)


def _read(original: Callable[..., Any], connection: Any, wire: Wire, *a: Any, **k: Any) -> Any:
    """Read the reply owed for the oldest command sent, and log it."""
    try:
        reply = original(connection, *a, **k)
    except ERRORS as error:
        reply = error
    return reply_read(wire, reply)


def reply_read(wire: Wire, reply: Any) -> Any:
    """``reply`` (an error reply as its exception) answers the oldest command owed: log it."""
    sent = wire.owed.popleft()
    if isinstance(reply, NOSCRIPT):
        wire.resend = True
    elif sent.command is not None:
        shown = "nil (a watched key changed)" if _aborted(sent.command, reply) else reply
        if sent.gate is not None:
            sent.gate.log(sent.command, shown, sent.sent)
        elif STATE.unscheduled is not None:
            STATE.unscheduled(threading.current_thread().name, sent.command, shown)
    return reply


def _aborted(command: tuple[Any, ...], reply: Any) -> bool:
    return reply is None and text(command[-1]).upper() == "EXEC"


def split_name(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """redis-py sends ``"SCRIPT LOAD"`` as one argument and splits it when packing."""
    if args and isinstance(args[0], str) and " " in args[0]:
        return (*args[0].split(), *args[1:])
    return args
