"""AppendFile: what is written reaches the OS at once, in one write; what is held waits for the
next write, a flush, its time, a full buffer or the close, and keeps its place."""

from __future__ import annotations

from pathlib import Path

import pytest

from ratelimit_harness.harness.history import appends
from ratelimit_harness.harness.history.appends import AppendFile


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


def test_without_a_hold_each_call_is_one_write(tmp_path: Path, writes: list[bytes]) -> None:
    file = AppendFile(tmp_path / "f", exclusive=True, hold_for=0)
    file.write(b"a\n")
    file.hold(b"b\n")
    assert writes == [b"a\n", b"b\n"]
    file.close()


def test_what_is_held_goes_with_the_next_write_in_order(
    tmp_path: Path, writes: list[bytes], clock: Clock
) -> None:
    path = tmp_path / "f"
    file = AppendFile(path, exclusive=True, hold_for=1.0, clock=clock)
    file.hold(b"1\n")
    file.hold(b"2\n")
    assert writes == []
    assert path.read_bytes() == b""
    file.write(b"3\n")
    assert writes == [b"1\n2\n3\n"]
    file.write(b"4\n")  # nothing held: alone
    assert writes[-1] == b"4\n"
    file.close()


def test_what_is_held_waits_its_time_at_most(
    tmp_path: Path, writes: list[bytes], clock: Clock
) -> None:
    path = tmp_path / "f"
    file = AppendFile(path, exclusive=True, hold_for=1.0, clock=clock)
    file.hold(b"1\n")
    clock.now += 0.9
    file.hold(b"2\n")
    assert writes == []
    clock.now += 0.1  # the first held is due: all go
    file.hold(b"3\n")
    assert writes == [b"1\n2\n3\n"]
    file.hold(b"4\n")  # its own time counts from now
    clock.now += 0.5
    file.hold(b"5\n")
    assert len(writes) == 1
    file.flush()
    assert writes[-1] == b"4\n5\n"
    file.flush()  # nothing held: no write
    assert len(writes) == 2
    file.close()
    assert path.read_bytes() == b"1\n2\n3\n4\n5\n"


def test_a_full_hold_is_written_whatever_the_time(
    tmp_path: Path, writes: list[bytes], clock: Clock
) -> None:
    file = AppendFile(tmp_path / "f", exclusive=True, hold_for=60.0, clock=clock)
    line = b"x" * 1023 + b"\n"
    for _ in range(appends.HELD_BYTES // len(line) - 1):
        file.hold(line)
    assert writes == []
    file.hold(line)
    assert writes == [line * (appends.HELD_BYTES // len(line))]
    file.close()


def test_closing_writes_what_is_held_and_then_refuses(tmp_path: Path, clock: Clock) -> None:
    path = tmp_path / "f"
    file = AppendFile(path, exclusive=True, hold_for=60.0, clock=clock)
    file.hold(b"kept\n")
    file.close()
    assert path.read_bytes() == b"kept\n"
    with pytest.raises(ValueError, match="closed"):
        file.write(b"late\n")
    file.close()  # a second close does nothing


def test_exclusive_refuses_a_file_that_exists_and_appending_does_not(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"before\n")
    with pytest.raises(FileExistsError):
        AppendFile(path, exclusive=True, hold_for=0)
    file = AppendFile(path, exclusive=False, hold_for=0)
    file.write(b"after\n")
    file.close()
    assert path.read_bytes() == b"before\nafter\n"
