"""What is one scheduling point on a connection: the thread explorer's points, from bytes."""

from __future__ import annotations

import pytest

from ratelimit_harness.harness.explorer.wire.steps import PASSES, SUBSCRIBING, Command, Sorter


def _frame(*args: str) -> bytes:
    parts = [f"${len(arg.encode())}\r\n{arg}\r\n" for arg in args]
    return f"*{len(args)}\r\n{''.join(parts)}".encode()


def _sort(sorter: Sorter, *commands: tuple[str, ...]) -> list[Command]:
    return [sorter.sort(_frame(*command)) for command in commands]


@pytest.mark.parametrize("entry", sorted(PASSES))
def test_every_command_of_the_table_passes(entry: str) -> None:
    command = Sorter().sort(_frame(*entry.split(), "arg"))
    assert not command.point
    assert command.replies == 1


@pytest.mark.parametrize(
    "command",
    [("SET", "k", "v"), ("get", "k"), ("SCRIPT", "FLUSH"), ("WATCH", "k"), ("EVAL", "s", "0")],
)
def test_any_other_command_is_a_point(command: tuple[str, ...]) -> None:
    sorted_ = Sorter().sort(_frame(*command))
    assert sorted_.point
    assert sorted_.held == (tuple(arg.encode() for arg in command),)


def test_an_inline_command_is_sorted_by_its_name_as_any_other() -> None:
    sorter = Sorter()
    assert not sorter.sort(b"ping\r\n").point
    assert sorter.sort(b"incr n\r\n").held == ((b"incr", b"n"),)


def test_a_block_is_one_point_at_its_exec_showing_the_whole_block() -> None:
    sorter = Sorter()
    multi, incr, ping, exec_ = _sort(sorter, ("MULTI",), ("INCR", "n"), ("PING",), ("EXEC",))
    assert [multi.point, incr.point, ping.point, exec_.point] == [False, False, False, True]
    assert exec_.held == ((b"MULTI",), (b"INCR", b"n"), (b"PING",), (b"EXEC",))
    assert sorter.sort(_frame("INCR", "n")).held == ((b"INCR", b"n"),)  # the block is over


@pytest.mark.parametrize("end", ["DISCARD", "RESET"])
def test_a_block_dropped_is_no_point_at_all(end: str) -> None:
    sorter = Sorter()
    commands = _sort(sorter, ("MULTI",), ("SET", "k", "v"), (end,), ("EXEC",))
    assert [command.point for command in commands] == [False, False, False, True]
    assert commands[-1].held == ((b"EXEC",),)  # an EXEC without MULTI: Redis refuses it


def test_a_nested_multi_is_not_queued() -> None:
    sorter = Sorter()
    *_, exec_ = _sort(sorter, ("MULTI",), ("MULTI",), ("INCR", "n"), ("EXEC",))
    assert exec_.held == ((b"MULTI",), (b"INCR", b"n"), (b"EXEC",))


def test_a_script_sent_again_after_noscript_passes_once() -> None:
    sorter = Sorter()
    first = sorter.sort(_frame("EVALSHA", "abc", "1", "k"))
    assert first.point
    sorter.answered(first, b"-NOSCRIPT No matching script.\r\n")
    assert not sorter.sort(_frame("SCRIPT", "LOAD", "return 1")).point
    assert not sorter.sort(_frame("EVALSHA", "abc", "1", "k")).point
    assert sorter.sort(_frame("EVALSHA", "abc", "1", "k")).point


def test_a_script_answered_otherwise_leaves_the_next_a_point() -> None:
    sorter = Sorter()
    first = sorter.sort(_frame("FCALL", "f", "0"))
    sorter.answered(first, b"-ERR Function not found\r\n")
    assert sorter.sort(_frame("FCALL", "f", "0")).point


@pytest.mark.parametrize("name", [*sorted(SUBSCRIBING), "MONITOR"])
def test_on_resp2_a_subscriber_is_forwarded_as_it_is(name: str) -> None:
    command = Sorter().sort(_frame(name, "channel"))
    assert (command.point, command.raw) == (False, True)


@pytest.mark.parametrize("name", sorted(SUBSCRIBING))
def test_on_resp3_subscribing_passes_owing_no_reply_but_its_pushes(name: str) -> None:
    sorter = Sorter()
    sorter.sort(_frame("HELLO", "3"))
    command = sorter.sort(_frame(name, "channel"))
    assert (command.point, command.raw, command.replies) == (False, False, 0)
    assert sorter.sort(_frame("MONITOR")).raw  # its output is no push


def test_a_hello_3_refused_leaves_the_connection_on_resp2() -> None:
    sorter = Sorter()
    hello = sorter.sort(_frame("HELLO", "3"))
    sorter.answered(hello, b"-NOPROTO unsupported protocol version\r\n")
    assert sorter.sort(_frame("SUBSCRIBE", "c")).raw


def test_an_empty_command_owes_no_reply() -> None:
    command = Sorter().sort(b"*0\r\n")
    assert (command.point, command.replies) == (False, 0)
