"""The line protocol: a limiter that is a program, driven one request at a time."""

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from ratelimit_harness.harness.process_clock import ClockFile, ProcessClock
from ratelimit_harness.harness.provision.virtual_time import START
from ratelimit_harness.limiters import Decision, Policy, resolve
from ratelimit_harness.limiters.program import (
    Program,
    ProgramError,
    ProgramLimiter,
    parse_answer,
    program_env,
)

COUNTING = [sys.executable, str(Path(__file__).parent / "programs" / "counting.py")]
POLICY = Policy.parse("fixed-window:limit=2,window=10")


@pytest.fixture
def program(tmp_path: Path) -> Iterator[Program]:
    env = program_env("redis://127.0.0.1:1/0", POLICY, 1)
    started = Program(COUNTING, env, stderr=tmp_path / "stderr.log")
    yield started
    started.close()


def test_answers_are_decisions_in_order(program: Program) -> None:
    limiter = ProgramLimiter(program, POLICY)
    shown = [limiter.check(k).allowed for k in ["a", "a", "b", "a", "b", "b"]]
    assert shown == [True, True, True, False, True, False]
    assert program.answered == 6


def test_the_program_gets_the_contracts_environment(program: Program) -> None:
    program.ask("a")
    assert program.answer(5.0) is not None
    assert program.last_words() == "instance 1 on redis://127.0.0.1:1/0"


def test_a_json_answer_carries_the_decisions_fields(program: Program) -> None:
    program.ask("json")
    answer = program.answer(5.0)
    assert answer is not None
    assert answer.decision == Decision(allowed=True, remaining=4, reset_at=12.5)


def test_a_line_that_is_no_decision_is_quoted(program: Program) -> None:
    program.ask("junk")
    answer = program.answer(5.0)
    assert answer is not None
    assert answer.decision is None
    assert answer.error == "answered 'perhaps': not allowed, rejected or JSON"
    with pytest.raises(ProgramError, match="answered 'perhaps'"):
        ProgramLimiter(program, POLICY).check("junk")


def test_no_answer_yet_is_none_and_the_next_one_still_comes(program: Program) -> None:
    program.ask("mute")
    assert program.answer(0.2) is None
    program.ask("a")
    answer = program.answer(5.0)
    assert answer is not None
    assert answer.decision == Decision(allowed=True)


def test_a_program_that_exits_says_its_code_and_last_words(program: Program) -> None:
    program.ask("die")
    with pytest.raises(ProgramError, match=r"ended with exit code 3: giving up: asked to die"):
        program.answer(5.0)
    with pytest.raises(ProgramError) as ended:
        program.ask("a")  # and it stays gone
    assert ended.value.exit_code == 3


def test_a_killed_program_is_gone_at_once(program: Program) -> None:
    program.kill()
    assert not program.alive()
    with pytest.raises(ProgramError, match="ended with exit code -9"):
        program.answer(5.0)


def test_a_command_that_does_not_exist_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ProgramError, match="cannot start 'no-such-limiter-program'"):
        Program("no-such-limiter-program --flag", program_env("redis://x", POLICY, 0))


@pytest.mark.parametrize(
    ("line", "decision"),
    [
        ("allowed", Decision(allowed=True)),
        ("rejected  ", Decision(allowed=False)),
        (
            '{"allowed": false, "retry_after": 2, "limit": 5}',
            Decision(False, limit=5, retry_after=2.0),
        ),
        ('{"allowed": 1}', None),
        ('{"allowed": true, "remaining": "4"}', None),
        ("[true]", None),
        ("", None),
    ],
)
def test_parse_answer(line: str, decision: Decision | None) -> None:
    assert parse_answer(line).decision == decision


def test_a_program_on_a_clock_file_reads_the_time_written_there(tmp_path: Path) -> None:
    clock = ClockFile.create(tmp_path, "now")
    env = program_env("redis://127.0.0.1:1/0", POLICY, 0)
    command = [sys.executable, str(Path(__file__).parent / "programs" / "clock.py")]
    program = Program(command, env, spawn=ProcessClock(clock).spawn)
    try:
        seen = []
        for instant in (START, START + 10.25, START + 10.25, START - 3):  # frozen, then moved
            clock.set_seconds(instant)
            program.ask("a")
            answer = program.answer(10.0)
            assert answer is not None
            assert answer.decision is not None
            seen.append(answer.decision.now)
        assert seen == pytest.approx([START, START + 10.25, START + 10.25, START - 3], abs=1e-6)
    finally:
        program.close()


def test_a_limiter_named_exec_is_that_program_on_the_clients_server() -> None:
    command = " ".join(COUNTING)
    client = redis.Redis(host="127.0.0.1", port=1, db=2)  # never connected: the program's
    limiter = resolve(f"exec:{command}")(client, POLICY)
    assert isinstance(limiter, ProgramLimiter)
    try:
        assert [limiter.check("a").allowed for _ in range(3)] == [True, True, False]
    finally:
        limiter.close()


def test_exec_without_a_command_is_refused() -> None:
    with pytest.raises(ProgramError, match="exec: needs a command"):
        resolve("exec:  ")
