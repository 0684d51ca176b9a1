"""RESP framing: a stream of commands or replies, cut anywhere, comes back as its whole values;
each whole value reads as what it says."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ratelimit_harness.harness.explorer.wire.resp import (
    MAX_DEPTH,
    Framer,
    ProtocolError,
    Push,
    ReplyError,
    command_args,
    decode,
    packed_commands,
    show,
)

# one of every kind a server sends, and what it reads as
REPLIES: list[tuple[bytes, Any]] = [
    (b"+OK\r\n", "OK"),
    (b":-42\r\n", -42),
    (b"$5\r\nhe\r\no\r\n", b"he\r\no"),  # a bulk holds CRLF as data
    (b"$0\r\n\r\n", b""),
    (b"$-1\r\n", None),
    (b"*-1\r\n", None),
    (b"*0\r\n", []),
    (b"*3\r\n:1\r\n$1\r\na\r\n*1\r\n+x\r\n", [1, b"a", ["x"]]),
    (b"_\r\n", None),
    (b",3.25\r\n", 3.25),
    (b",-inf\r\n", float("-inf")),
    (b"#t\r\n", True),
    (b"#f\r\n", False),
    (
        b"(3492890328409238509324850943850943825024385\r\n",
        3492890328409238509324850943850943825024385,
    ),
    (b"=15\r\ntxt:Some string\r\n", b"Some string"),
    (b"%2\r\n$1\r\na\r\n:1\r\n+b\r\n*1\r\n:2\r\n", {b"a": 1, "b": [2]}),
    (b"%0\r\n", {}),
    (b"~2\r\n:1\r\n$1\r\nx\r\n", [1, b"x"]),
    (b">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n", Push([b"invalidate", [b"k"]])),
    (b"|1\r\n+ttl\r\n:3600\r\n$3\r\nval\r\n", b"val"),  # the attribute goes, its value stays
    (b"*2\r\n|1\r\n+a\r\n:1\r\n:7\r\n:8\r\n", [7, 8]),  # an attribute inside an aggregate
]
ERRORS: list[tuple[bytes, str]] = [
    (b"-ERR unknown command 'FOO'\r\n", "ERR unknown command 'FOO'"),
    (b"!21\r\nSYNTAX invalid syntax\r\n", "SYNTAX invalid syntax"),
]
STREAM = b"".join(value for value, _ in [*REPLIES, *ERRORS])
WHOLE = [value for value, _ in [*REPLIES, *ERRORS]]


@pytest.mark.parametrize(("value", "expected"), REPLIES)
def test_every_kind_of_reply_reads_as_what_it_says(value: bytes, expected: Any) -> None:
    decoded = decode(value)
    assert decoded == expected
    assert type(decoded) is type(expected)


@pytest.mark.parametrize(("value", "message"), ERRORS)
def test_an_error_reply_reads_as_its_message(value: bytes, message: str) -> None:
    decoded = decode(value)
    assert isinstance(decoded, ReplyError)
    assert str(decoded) == message


def test_a_stream_of_replies_cut_at_any_byte_comes_back_whole() -> None:
    for cut in range(len(STREAM) + 1):
        framer = Framer()
        assert framer.feed(STREAM[:cut]) + framer.feed(STREAM[cut:]) == WHOLE, cut


def test_a_stream_of_replies_arriving_a_byte_at_a_time_comes_back_whole() -> None:
    framer = Framer()
    assert [
        value for at in range(len(STREAM)) for value in framer.feed(STREAM[at : at + 1])
    ] == WHOLE


def _bulk(data: bytes) -> bytes:
    return b"$%d\r\n%s\r\n" % (len(data), data)


def _leaves() -> st.SearchStrategy[tuple[bytes, Any]]:
    words = st.text("abcxyz:.- ", max_size=8)
    data = st.binary(max_size=12)
    return st.one_of(
        words.map(lambda w: (f"+{w}\r\n".encode(), w)),
        st.integers().map(lambda n: (b":%d\r\n" % n, n)),
        st.integers().map(lambda n: (b"(%d\r\n" % n, n)),
        data.map(lambda b: (_bulk(b), b)),
        data.map(lambda b: (b"=%d\r\ntxt:%s\r\n" % (len(b) + 4, b), b)),
        st.floats(allow_nan=False).map(lambda f: (f",{f!r}\r\n".encode(), f)),
        st.booleans().map(lambda b: (b"#t\r\n" if b else b"#f\r\n", b)),
        st.sampled_from([(b"_\r\n", None), (b"$-1\r\n", None), (b"*-1\r\n", None)]),
    )


def _aggregates(
    children: st.SearchStrategy[tuple[bytes, Any]],
) -> st.SearchStrategy[tuple[bytes, Any]]:
    items = st.lists(children, max_size=4)

    def joined(kind: bytes, pairs: list[tuple[bytes, Any]]) -> bytes:
        return b"%s%d\r\n" % (kind, len(pairs)) + b"".join(value for value, _ in pairs)

    entries = st.lists(st.tuples(st.binary(max_size=4), children), max_size=3)

    def mapped(kind: bytes, pairs: list[tuple[bytes, tuple[bytes, Any]]]) -> bytes:
        body = b"".join(_bulk(key) + value for key, (value, _) in pairs)
        return b"%s%d\r\n" % (kind, len(pairs)) + body

    return st.one_of(
        items.map(lambda p: (joined(b"*", p), [v for _, v in p])),
        items.map(lambda p: (joined(b"~", p), [v for _, v in p])),
        items.map(lambda p: (joined(b">", p), Push(v for _, v in p))),
        entries.map(lambda p: (mapped(b"%", p), {key: v for key, (_, v) in p})),
        st.tuples(entries, children).map(
            lambda a: (mapped(b"|", a[0]) + a[1][0], a[1][1])  # an attribute, then its value
        ),
    )


VALUES = st.recursive(_leaves(), _aggregates, max_leaves=12)


@given(st.lists(VALUES, min_size=1, max_size=5), st.lists(st.integers(0, 400), max_size=6))
def test_any_replies_in_any_pieces_come_back_whole_and_read_as_sent(
    values: list[tuple[bytes, Any]], cuts: list[int]
) -> None:
    stream = b"".join(value for value, _ in values)
    framer, frames, start = Framer(), [], 0
    for cut in [*sorted(min(cut, len(stream)) for cut in cuts), len(stream)]:
        frames += framer.feed(stream[start:cut])
        start = cut
    assert frames == [value for value, _ in values]
    assert [decode(frame) for frame in frames] == [expected for _, expected in values]


COMMANDS = [
    (b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$3\r\na b\r\n", (b"SET", b"k", b"a b")),
    (b"GET k\r\n", (b"GET", b"k")),  # inline
    (b"*1\r\n$4\r\nPING\r\n", (b"PING",)),
    (b"  incr   n \n", (b"incr", b"n")),  # inline, spaced, a bare newline
    (b"*0\r\n", ()),  # Redis ignores it
]


def test_a_stream_of_commands_cut_at_any_byte_comes_back_whole_without_blank_lines() -> None:
    stream = b"\r\n".join(command for command, _ in COMMANDS) + b"\r\n\r\n"
    for cut in range(len(stream) + 1):
        framer = Framer(inline=True)
        frames = framer.feed(stream[:cut]) + framer.feed(stream[cut:])
        assert [command_args(frame) for frame in frames] == [args for _, args in COMMANDS], cut


def test_a_command_is_an_array_of_bulk_strings() -> None:
    with pytest.raises(ProtocolError, match="array of bulk strings"):
        command_args(b"*2\r\n$3\r\nGET\r\n:1\r\n")


@pytest.mark.parametrize(
    ("stream", "why"),
    [
        (b"?what\r\n", "not RESP"),
        (b"$x\r\n", "not a length"),
        (b"*-2\r\n", "a length of -2"),
        (b"!-1\r\n", "a length of -1"),
        (b"$2\r\nabcd\r\n", "not ended by CRLF"),
        (b"$?\r\n;4\r\nHell\r\n;0\r\n", "streamed"),
        (b"*?\r\n:1\r\n.\r\n", "streamed"),
    ],
)
def test_what_is_not_resp_is_refused(stream: bytes, why: str) -> None:
    with pytest.raises(ProtocolError, match=why):
        Framer().feed(stream)


def test_a_value_over_the_bound_is_refused_before_it_is_read() -> None:
    with pytest.raises(ProtocolError, match="bulk of 100 bytes"):
        Framer(limit=64).feed(b"$100\r\n")
    with pytest.raises(ProtocolError, match="over 64 bytes"):
        Framer(limit=64).feed(b"+" + b"x" * 100)  # no end of line in sight
    with pytest.raises(ProtocolError, match="over 64 bytes"):
        Framer(inline=True, limit=64).feed(b"GET " + b"k" * 100)


def test_aggregates_nested_too_deep_are_refused() -> None:
    assert Framer().feed(b"*1\r\n" * MAX_DEPTH + b":1\r\n") == [b"*1\r\n" * MAX_DEPTH + b":1\r\n"]
    with pytest.raises(ProtocolError, match="nested"):
        Framer().feed(b"*1\r\n" * (MAX_DEPTH + 1))


def test_decode_takes_exactly_one_whole_value() -> None:
    with pytest.raises(ProtocolError, match="not one whole"):
        decode(b"*2\r\n:1\r\n")
    with pytest.raises(ProtocolError, match="more than one"):
        decode(b":1\r\n:2\r\n")


def test_rest_hands_over_what_is_not_whole_yet() -> None:
    framer = Framer()
    assert framer.feed(b":1\r\n$5\r\nab") == [b":1\r\n"]
    assert framer.rest() == b"$5\r\nab"
    assert framer.feed(b"+OK\r\n") == [b"+OK\r\n"]  # framed afresh


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (None, "nil"),
        (True, "true"),
        (b"abc", "abc"),
        ("OK", "OK"),
        (3.5, "3.5"),
        ([1, [b"a", None]], "[1, [a, nil]]"),
        ({b"a": 1}, "{a: 1}"),
        (Push([b"invalidate", [b"k"]]), "push [invalidate, [k]]"),
        (ReplyError("ERR no"), "ERR no"),
    ],
)
def test_show_puts_a_reply_in_one_line(value: Any, shown: str) -> None:
    assert show(value) == shown


def test_a_pipeline_packed_by_a_client_is_cut_into_its_commands() -> None:
    """As redis-py packs INCR then PEXPIRE: each command's exact bytes, and its arguments."""
    incr = b"*2\r\n$4\r\nINCR\r\n$1\r\nk\r\n"
    pexpire = b"*3\r\n$7\r\nPEXPIRE\r\n$1\r\nk\r\n$5\r\n10000\r\n"
    assert packed_commands(incr + pexpire) == [
        (incr, (b"INCR", b"k")),
        (pexpire, (b"PEXPIRE", b"k", b"10000")),
    ]
    with pytest.raises(ProtocolError, match="cut short"):
        packed_commands(incr + pexpire[:-3])
