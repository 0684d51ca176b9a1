"""The Recorder: each record reaches the file at once, in one write, and a killed process
leaves its completed operations and, as unknown, the one it had in flight."""

from __future__ import annotations

import json
import math
import os
import select
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from ratelimit_harness.harness.history import Operation, Outcome, Recorder, merge_journals
from tests.clocks import START, ManualClock

ROOT = Path(__file__).resolve().parents[3]
TIMEOUT = 30.0


def records(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_invoke_is_on_disk_before_the_operation_completes(tmp_path: Path) -> None:
    path = tmp_path / "app-1.jsonl"
    clock = ManualClock()
    with Recorder(path, "app-1", clock) as recorder:
        token = recorder.invoke("user-1")
        assert records(path) == [
            {"event": "invoke", "op": token, "process": "app-1", "key": "user-1", "time": START}
        ]
        assert merge_journals([path]) == [
            Operation("app-1", "user-1", START, None, Outcome.UNKNOWN)
        ]
        clock.advance(0.25)
        recorder.complete(token, Outcome.REJECTED, now=START + 0.1)
        assert merge_journals([path]) == [
            Operation("app-1", "user-1", START, START + 0.25, Outcome.REJECTED, START + 0.1)
        ]


def test_each_record_is_one_os_write_of_one_whole_line(tmp_path: Path, writes: list[bytes]) -> None:
    with Recorder(tmp_path / "j.jsonl", "app-1") as recorder:
        token = recorder.invoke("k")
        assert len(writes) == 1
        recorder.complete(token, Outcome.ALLOWED)
        assert len(writes) == 2
    assert all(data.endswith(b"\n") and data.count(b"\n") == 1 for data in writes)
    assert b"".join(writes) == (tmp_path / "j.jsonl").read_bytes()


def test_held_completions_go_with_the_next_record_that_begins_something(
    tmp_path: Path, writes: list[bytes]
) -> None:
    path = tmp_path / "j.jsonl"
    clock = ManualClock()
    with Recorder(path, "app-1", clock, hold_for=3600) as recorder:
        first = recorder.invoke("k")
        assert [len(data.splitlines()) for data in writes] == [1]
        clock.advance(1)
        recorder.complete(first, Outcome.ALLOWED)
        assert len(writes) == 1  # held
        clock.advance(1)
        second = recorder.invoke("k")
        assert [len(data.splitlines()) for data in writes] == [1, 2]  # completion, then invoke
        recorder.complete(second, Outcome.ALLOWED)
        recorder.give_back(second)  # begins something: written at once, after what was held
        recorder.given_back(second)  # ends it: held until the close
        assert [len(data.splitlines()) for data in writes] == [1, 2, 2]
    assert [len(data.splitlines()) for data in writes] == [1, 2, 2, 1]
    events = [record["event"] for record in records(path)]
    assert events == ["invoke", "complete", "invoke", "complete", "refund", "refunded"]
    times = [float(str(record["time"])) for record in records(path)]
    assert times == sorted(times)
    assert [op.complete for op in merge_journals([path])] == [START + 1, START + 2]


def test_held_completions_are_written_by_a_flush(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    with Recorder(path, "app-1", hold_for=3600) as recorder:
        recorder.complete(recorder.invoke("k"), Outcome.REJECTED)
        assert [op.outcome for op in merge_journals([path])] == [Outcome.UNKNOWN]
        recorder.flush()
        assert [op.outcome for op in merge_journals([path])] == [Outcome.REJECTED]


def test_appends_after_whatever_else_was_appended(tmp_path: Path) -> None:
    # O_APPEND: a record lands at the end of the file, not at the recorder's own offset.
    path = tmp_path / "j.jsonl"
    with Recorder(path, "app-1") as recorder:
        recorder.invoke("a")
        with open(path, "a") as other:
            other.write("appended by someone else\n")
        recorder.invoke("b")
    lines = path.read_text().splitlines()
    assert len(lines) == 3
    assert lines[1] == "appended by someone else"
    assert json.loads(lines[2])["key"] == "b"


def test_a_short_write_is_finished(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_write = os.write
    monkeypatch.setattr(os, "write", lambda fd, data: real_write(fd, data[:10]))
    with Recorder(tmp_path / "j.jsonl", "app-1") as recorder:
        recorder.complete(recorder.invoke("k"), Outcome.ALLOWED)
    assert [op.outcome for op in merge_journals([tmp_path / "j.jsonl"])] == [Outcome.ALLOWED]


def test_refuses_a_journal_that_exists(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    path.write_text("")
    with pytest.raises(FileExistsError):
        Recorder(path, "app-1")


def test_a_token_completes_once_and_only_if_invoked(tmp_path: Path) -> None:
    with Recorder(tmp_path / "j.jsonl", "app-1") as recorder:
        token = recorder.invoke("k")
        with pytest.raises(ValueError, match="not in flight"):
            recorder.complete(token + 1, Outcome.ALLOWED)
        recorder.complete(token, Outcome.ALLOWED)
        with pytest.raises(ValueError, match="not in flight"):
            recorder.complete(token, Outcome.ALLOWED)
    assert len(records(tmp_path / "j.jsonl")) == 2


def test_a_refused_completion_leaves_the_operation_in_flight(tmp_path: Path) -> None:
    with Recorder(tmp_path / "j.jsonl", "app-1") as recorder:
        token = recorder.invoke("k")
        with pytest.raises(ValueError, match="unknown outcome"):
            recorder.complete(token, "maybe")  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="now must be finite"):
            recorder.complete(token, Outcome.ALLOWED, now=math.nan)
        recorder.complete(token, Outcome.ERROR, now=5)
    assert [(op.outcome, op.now) for op in merge_journals([tmp_path / "j.jsonl"])] == [
        (Outcome.ERROR, 5.0)
    ]


def test_a_clock_gone_wrong_writes_nothing(tmp_path: Path) -> None:
    clock = ManualClock(math.inf)
    with Recorder(tmp_path / "j.jsonl", "app-1", clock) as recorder:
        with pytest.raises(ValueError, match="the clock said inf"):
            recorder.invoke("k")
        with pytest.raises(TypeError, match="a key is a str"):
            recorder.invoke(3)  # type: ignore[arg-type]
    assert (tmp_path / "j.jsonl").read_text() == ""


def test_closed_means_closed(tmp_path: Path) -> None:
    recorder = Recorder(tmp_path / "j.jsonl", "app-1")
    with recorder:
        token = recorder.invoke("k")
    with pytest.raises(ValueError, match="closed"):
        recorder.complete(token, Outcome.ALLOWED)
    with pytest.raises(ValueError, match="closed"):
        recorder.invoke("k")
    recorder.close()  # a second close does nothing


def test_threads_may_share_a_recorder(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    with Recorder(path, "app-1") as recorder:

        def work(name: str) -> None:
            for i in range(500):
                recorder.complete(recorder.invoke(f"{name}-{i}"), Outcome.ALLOWED)

        threads = [threading.Thread(target=work, args=(f"t{n}",)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(TIMEOUT)
    history = merge_journals([path])
    assert len(history) == 2000
    assert {op.key for op in history} == {f"t{n}-{i}" for n in range(4) for i in range(500)}
    assert all(op.outcome is Outcome.ALLOWED for op in history)


VICTIM = """
import sys, time
from ratelimit_harness.harness.history import Outcome, Recorder

with Recorder(sys.argv[1], "victim", hold_for=float(sys.argv[2])) as recorder:
    recorder.invoke("held")  # in flight until the kill
    for i in range(50_000):
        token = recorder.invoke(f"op-{i}")
        recorder.complete(token, Outcome.ALLOWED if i % 2 else Outcome.REJECTED, now=float(i))
        if i == 1000:
            print("recording", flush=True)
    time.sleep(60)
"""


@pytest.mark.parametrize("hold_for", [0.0, 3600.0])
def test_a_killed_process_leaves_every_completed_operation_and_its_in_flight_one(
    tmp_path: Path, hold_for: float
) -> None:
    """Holding completions (``hold_for``) loses at most the last one: each rides with the
    next invoke, and every invoke is written before its operation runs."""
    path = tmp_path / "victim.jsonl"
    victim = subprocess.Popen(
        [sys.executable, "-c", VICTIM, str(path), str(hold_for)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert victim.stdout is not None
        ready, _, _ = select.select([victim.stdout], [], [], TIMEOUT)
        assert ready, "the victim never started recording"
        assert victim.stdout.readline() == "recording\n"
        victim.send_signal(signal.SIGKILL)
        assert victim.wait(TIMEOUT) == -signal.SIGKILL
    finally:
        if victim.poll() is None:
            victim.kill()
            victim.wait(TIMEOUT)
        if victim.stdout:
            victim.stdout.close()

    history = merge_journals([path])
    held = [op for op in history if op.key == "held"]
    assert len(held) == 1
    assert held[0] == Operation("victim", "held", held[0].invoke, None, Outcome.UNKNOWN)
    assert held[0] is history[0]  # invoked first
    looped = [op for op in history if op.key != "held"]
    assert len(looped) > 1000
    assert [op.key for op in looped] == [f"op-{i}" for i in range(len(looped))]
    for i, op in enumerate(looped[:-1]):
        expected = Outcome.ALLOWED if i % 2 else Outcome.REJECTED
        assert (op.outcome, op.now) == (expected, float(i))
        assert op.complete is not None
        assert op.complete >= op.invoke
    last = looped[-1]  # completed, or caught in flight by the kill
    assert last.outcome in (
        Outcome.UNKNOWN,
        Outcome.ALLOWED if len(looped) % 2 == 0 else Outcome.REJECTED,
    )
    assert (last.complete is None) == (last.outcome is Outcome.UNKNOWN)
    if hold_for:
        assert last.outcome is Outcome.UNKNOWN  # its completion was held when the kill came


def test_a_completion_recorded_after_the_fact_keeps_its_own_time(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    clock = ManualClock()
    with Recorder(path, "app-1", clock) as recorder:
        first = recorder.invoke("k")
        clock.advance(2)
        second = recorder.invoke("k")
        recorder.complete(first, Outcome.ALLOWED, at=START + 1)  # before the second began
        recorder.complete(second, Outcome.REJECTED)
        with pytest.raises(ValueError, match="at must be finite"):
            recorder.complete(second + 1, Outcome.ALLOWED, at=math.inf)
    assert [(op.invoke, op.complete) for op in merge_journals([path])] == [
        (START, START + 1),
        (START + 2, START + 2),
    ]
