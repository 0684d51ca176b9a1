"""RESP2 and RESP3, as far as a proxy needs them: where each whole value ends in a byte stream,
and what a whole value says (a command's arguments; a reply, to show in a trace).

A proxy forwards the bytes it read, unchanged: it parses only to know where one command or one
reply ends (``Framer``), and reads a whole one when it must know what it says (``command_args``,
``decode``). The explorer's wire cuts a pipeline a client packed into its commands with the
same parser (``packed_commands``).

Values: ``+`` simple string, ``-`` error, ``:`` integer, ``$`` bulk string (``$-1``: RESP2's
null), ``*`` array (``*-1``: RESP2's null array), and RESP3's ``_`` null, ``,`` double, ``#``
boolean, ``(`` big number, ``!`` bulk error, ``=`` verbatim string, ``%`` map, ``~`` set, ``>``
push, and ``|`` attribute (a map that comes before the value it describes: framed with it,
dropped by ``decode``). RESP3's streamed strings and aggregates (``$?``, ``*?``) are refused:
Redis sends none. Commands are arrays of bulk strings, or inline commands (a line of words, as a
person types them; ``Framer(inline=True)``), as Redis reads them.

Bounded: a value longer than ``limit`` bytes, or nested deeper than ``MAX_DEPTH``, is a
``ProtocolError``, as is anything that is not RESP.
"""

from __future__ import annotations

import re
from typing import Any

MAX_VALUE = 64 * 1024 * 1024  # bytes of one command or one reply
MAX_DEPTH = 64  # aggregates within aggregates (Redis' deepest replies nest four or five)

_LINE = frozenset(b"+-:_,#(")  # the value is its header line
_BULK = frozenset(b"$!=")  # a length, then that many bytes and CRLF
# an aggregate of a count: its elements per count, and how many come beyond (an attribute's
# map is followed by the value it describes)
_ELEMENTS = {
    ord("*"): (1, 0),
    ord("~"): (1, 0),
    ord(">"): (1, 0),
    ord("%"): (2, 0),
    ord("|"): (2, 1),
}
_NULLABLE = frozenset(b"$*")  # RESP2: a length of -1 is a null
_LENGTH = re.compile(rb"-?[0-9]+")


class ProtocolError(Exception):
    """The bytes are not RESP (or not a command where one must be), or are over a bound."""


class ReplyError(Exception):
    """An error reply (``-`` or ``!``), as a value: its message is the server's text."""


class Push(list[Any]):
    """A RESP3 push message (``>``): out of band, not the reply to any command."""


class Framer:
    """Cuts a byte stream into whole RESP values, whatever the splits it arrives in.

    ``feed`` returns every value completed by the bytes given, each as its exact bytes; bytes
    of a value not yet whole are kept (at most ``limit``) and resumed where they stopped, so a
    large reply arriving in many pieces is scanned once. With ``inline=True`` (a server's view
    of its clients) a value that does not begin with ``*`` is an inline command, a line; blank
    lines are dropped, as Redis ignores them.
    """

    def __init__(self, *, inline: bool = False, limit: int = MAX_VALUE) -> None:
        self._inline = inline
        self._limit = limit
        self._buffer = bytearray()
        self._at = 0  # the value at the buffer's start is whole up to here
        self._open: list[int] = []  # elements still owed by each aggregate begun

    def feed(self, data: bytes) -> list[bytes]:
        self._buffer += data
        values = []
        while (end := self._scan()) is not None:
            value = bytes(self._buffer[:end])
            del self._buffer[:end]
            self._at = 0
            if not self._inline or value.strip():
                values.append(value)
        if len(self._buffer) > self._limit:
            raise ProtocolError(f"a value of over {self._limit} bytes (the proxy's bound)")
        return values

    def rest(self) -> bytes:
        """The bytes of a value not yet whole, taken out: the stream is no longer framed."""
        rest = bytes(self._buffer)
        self._buffer.clear()
        self._at, self._open = 0, []
        return rest

    def _scan(self) -> int | None:
        """Step over the whole elements that follow ``_at``: where the first value ends once it
        is whole, else None."""
        while self._at < len(self._buffer):
            if self._inline and self._at == 0 and self._buffer[0] != ord("*"):
                newline = self._buffer.find(b"\n")
                return None if newline < 0 else newline + 1
            element = self._element(self._at)
            if element is None:
                return None
            self._at, elements = element
            if elements:
                if len(self._open) >= MAX_DEPTH:
                    raise ProtocolError(f"aggregates nested over {MAX_DEPTH} deep")
                self._open.append(elements)
                continue
            while self._open:  # an element is whole: so is each aggregate it was the last of
                self._open[-1] -= 1
                if self._open[-1]:
                    break
                self._open.pop()
            if not self._open:
                return self._at
        return None

    def _element(self, at: int) -> tuple[int, int] | None:
        """Where the element at ``at`` ends (an aggregate: its header) and how many elements it
        opens; None while it is not whole."""
        buffer = self._buffer
        newline = buffer.find(b"\r\n", at)
        if newline < 0:
            return None
        kind, header, after = buffer[at], buffer[at + 1 : newline], newline + 2
        if kind in _LINE:
            return after, 0
        if kind in _BULK:
            size = _length(header, kind)
            if size > self._limit:
                raise ProtocolError(f"a bulk of {size} bytes (the proxy's bound: {self._limit})")
            end = after + size + 2 if size >= 0 else after
            if len(buffer) < end:
                return None
            if size >= 0 and buffer[end - 2 : end] != b"\r\n":
                raise ProtocolError(f"a bulk of {size} bytes not ended by CRLF")
            return end, 0
        if kind in _ELEMENTS:
            per, beyond = _ELEMENTS[kind]
            return after, per * max(_length(header, kind), 0) + beyond
        raise ProtocolError(f"not RESP: {bytes(buffer[at : at + 20])!r}")


def _length(header: bytes | bytearray, kind: int) -> int:
    """A bulk's or an aggregate's length (-1 for RESP2's nulls)."""
    if header[:1] == b"?":
        raise ProtocolError("a streamed RESP3 value (Redis sends none)")
    if not _LENGTH.fullmatch(header):
        raise ProtocolError(f"not a length: {bytes(header[:20])!r}")
    length = int(header)
    if length < 0 and not (length == -1 and kind in _NULLABLE):
        raise ProtocolError(f"a length of {length}")
    return length


def command_args(value: bytes) -> tuple[bytes, ...]:
    """A whole command's arguments: an array of bulk strings, or an inline command's words (split
    at spaces; quotes are not undone). ``()`` for an empty one, which Redis ignores."""
    if value[:1] != b"*":
        return tuple(value.split())
    args = decode(value)
    if args is None:
        return ()
    if not isinstance(args, list) or not all(isinstance(arg, bytes) for arg in args):
        raise ProtocolError(f"a command is an array of bulk strings, not {value[:40]!r}")
    return tuple(args)


def packed_commands(data: bytes) -> list[tuple[bytes, tuple[bytes, ...]]]:
    """Whole commands written one after another (a pipeline's bytes, as a client packs them):
    each one's bytes and arguments. A ``ProtocolError`` if the last is not whole."""
    framer = Framer()
    commands = [(value, command_args(value)) for value in framer.feed(data)]
    if rest := framer.rest():
        raise ProtocolError(f"a command cut short: {rest[:40]!r}")
    return commands


def decode(value: bytes) -> Any:
    """A whole value as Python: str (simple strings), ``ReplyError``, int (integers, big
    numbers), bytes (bulk and verbatim strings, without the verbatim's format), None (every
    null), float, bool, list (arrays and sets, in the server's order), dict, ``Push``."""
    try:
        decoded, end = _decode(value, 0, 0)
    except (ValueError, IndexError) as error:  # cut short, or a malformed number
        raise ProtocolError(f"not one whole RESP value: {value[:40]!r} ({error})") from None
    if end != len(value):
        raise ProtocolError(f"more than one RESP value: {value[:40]!r}")
    return decoded


def _decode(data: bytes, at: int, depth: int) -> tuple[Any, int]:
    if depth > MAX_DEPTH:
        raise ProtocolError(f"aggregates nested over {MAX_DEPTH} deep")
    newline = data.index(b"\r\n", at)
    kind, header, after = data[at], data[at + 1 : newline], newline + 2
    if kind in _BULK:
        return _bulk(data, kind, _length(header, kind), after)
    if kind in _ELEMENTS:
        return _aggregate(data, kind, _length(header, kind), after, depth)
    return _line(kind, header.decode(errors="replace")), after


def _bulk(data: bytes, kind: int, size: int, at: int) -> tuple[Any, int]:
    if size < 0:
        return None, at
    body, end = data[at : at + size], at + size + 2
    if len(body) < size or data[end - 2 : end] != b"\r\n":
        raise ValueError("a bulk cut short")
    if kind == ord("!"):
        return ReplyError(body.decode(errors="replace")), end
    return (body[4:] if kind == ord("=") else body), end  # a verbatim string's "txt:" goes


def _aggregate(data: bytes, kind: int, count: int, at: int, depth: int) -> tuple[Any, int]:
    if count < 0:
        return None, at
    per, beyond = _ELEMENTS[kind]
    items = []
    for _ in range(per * count + beyond):
        item, at = _decode(data, at, depth + 1)
        items.append(item)
    if kind == ord("|"):  # the value described; the attributes go
        return items[-1], at
    if kind == ord("%"):
        return {_hashable(k): v for k, v in zip(items[::2], items[1::2], strict=True)}, at
    return (Push(items) if kind == ord(">") else items), at


def _line(kind: int, text: str) -> Any:
    match chr(kind):
        case "+":
            return text
        case "-":
            return ReplyError(text)
        case ":" | "(":
            return int(text)
        case ",":
            return float(text)
        case "#":
            if text not in ("t", "f"):
                raise ProtocolError(f"not a boolean: {text[:20]!r}")
            return text == "t"
        case "_":
            return None
    raise ProtocolError(f"not RESP: {chr(kind)!r}")


def _hashable(key: Any) -> Any:
    """A map's key as a dict takes it (Redis' keys are strings; an aggregate becomes a tuple)."""
    if isinstance(key, list):
        return tuple(_hashable(item) for item in key)
    if isinstance(key, dict):
        return tuple((k, _hashable(v)) for k, v in key.items())
    return key


def show(value: Any) -> str:
    """A decoded value in one line, as a trace shows a reply: nil, text, [a, b], {k: v}."""
    if value is None:
        return "nil"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    if isinstance(value, dict):
        return "{" + ", ".join(f"{show(k)}: {show(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        shown = "[" + ", ".join(map(show, value)) + "]"
        return f"push {shown}" if isinstance(value, Push) else shown
    return str(value)
