"""A limiter that is a program, in any language: one OS process on the line protocol.

The program is started with the caller's environment plus ``REDIS_URL`` (its own address to
Redis), ``RATELIMIT_POLICY`` (the policy string) and ``RATELIMIT_INSTANCE`` (which copy it is,
0..K-1). It reads one request per line on stdin and answers each, in order, with one line on
stdout. A request is an identity (``user:1``), or an identity, a space and what the request
costs (``user:1 3``: a weighted request, 3 units of the budget; sent only when the cost is not
1). A give-back (``race --give-back``) is the line ``refund IDENTITY COST`` (three words, so
never a request), sent right after the answer ``allowed`` to the request it gives back: the
program gives that request back and answers ``ok``. The answers:

    allowed
    rejected
    {"allowed": true, "remaining": 4, "limit": 5, "reset_at": 1800000010.0, "retry_after": 0}

(the JSON object's fields other than ``allowed`` are optional: those of ``Decision``). A line
that is neither is an answer that is not a decision (``Answer.error`` quotes it). Its stderr goes
to a file of the caller's (or is dropped). On end of input it should exit; one that does not is
killed ``GRACE`` seconds later.

A limiter named ``exec:COMMAND`` (``--limiter "exec:node my_limiter.js"``) is built as a
``ProgramLimiter`` on one copy of the program (``program_builder``), wherever a limiter name
goes; the race explorer runs several copies, each behind a scheduling proxy of its own.

``Program`` is the process, driven one request at a time: ``ask`` writes an identity, ``answer``
waits (bounded) for the next line; a reader thread collects stdout so that a wait never blocks
on a pipe. ``ProgramLimiter`` presents it as a ``Limiter`` (``check`` asks and waits).
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import shlex
import signal
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from ratelimit_harness.limiters.decision import Decision
from ratelimit_harness.limiters.plugin import url_of
from ratelimit_harness.limiters.policy import Policy

EXEC = "exec:"  # a limiter named ``exec:COMMAND`` is that program (``program_builder``)
GRACE = 2.0  # seconds a program has to exit once its input ends, before it is killed
ANSWER_TIMEOUT = 10.0  # seconds ``ProgramLimiter.check`` waits for an answer
ERROR_LINE = re.compile(r"\b\w*(Error|Exception)\b")  # a line of stderr that names one
FIELDS = ("remaining", "limit", "reset_at", "retry_after", "now")  # a JSON answer's optional
_ENDED = None  # what the reader thread queues when stdout ends


def given_back(identity: str, cost: int) -> str:
    """The line that gives back the request just admitted (three words: never a request)."""
    return f"refund {identity} {cost}"


GIVEN_BACK = "ok"  # a program's answer to a give-back it made


def asked(identity: str, cost: int) -> str:
    """The line that asks for one request: the identity, with its cost when that is not 1."""
    if cost == 1:
        return identity
    if " " in identity:
        raise ValueError(f"a weighted request's identity has no space: {identity!r}")
    return f"{identity} {cost}"


class ProgramError(Exception):
    """A program that cannot be started, or that ended (``exit_code``) where an answer was due."""

    def __init__(self, message: str, exit_code: int | None = None) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@dataclass(frozen=True)
class Answer:
    """One line the program answered: a decision, or (``decision`` None) why it is not one."""

    line: str
    decision: Decision | None
    error: str = ""


def parse_answer(line: str) -> Answer:
    """What a line of the program's stdout says (without its newline)."""
    text = line.strip()
    if text in ("allowed", "rejected"):
        return Answer(line, Decision(allowed=text == "allowed"))
    try:
        record = json.loads(text)
    except ValueError:
        record = None
    if not isinstance(record, dict) or not isinstance(record.get("allowed"), bool):
        return Answer(line, None, f"answered {line[:200]!r}: not allowed, rejected or JSON")
    try:
        numbers = {name: _number(record[name]) for name in FIELDS if record.get(name) is not None}
    except TypeError as error:
        return Answer(line, None, f"answered {line[:200]!r}: {error}")
    decision = Decision(
        allowed=record["allowed"],
        remaining=_whole(numbers.get("remaining")),
        limit=_whole(numbers.get("limit")),
        reset_at=numbers.get("reset_at"),
        retry_after=numbers.get("retry_after"),
        now=numbers.get("now"),
    )
    return Answer(line, decision)


def _whole(value: float | None) -> int | None:
    return None if value is None else int(value)


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{value!r} is not a number")
    return float(value)


def program_env(url: str, policy: Policy | str, instance: int) -> dict[str, str]:
    """The environment a copy of a program gets: this one's, and what the contract adds."""
    return {
        **os.environ,
        "REDIS_URL": url,
        "RATELIMIT_POLICY": str(policy),
        "RATELIMIT_INSTANCE": str(instance),
    }


class Program:
    """One running copy of a program (see the module's text)."""

    def __init__(
        self,
        command: str | Sequence[str],
        env: Mapping[str, str],
        *,
        stderr: Path | None = None,
        cwd: Path | None = None,
        on_output: Callable[[], None] = lambda: None,
        spawn: Callable[..., subprocess.Popen[str]] = subprocess.Popen,
    ) -> None:
        """``on_output`` is called (in a thread of the program's) after each line it answers,
        and when its output ends: to wake a caller that waits on other things too. ``spawn``
        starts the process, as ``subprocess.Popen`` does (the race explorer's starts it on a
        clock of its own)."""
        self._on_output = on_output
        self.argv = shlex.split(command) if isinstance(command, str) else list(command)
        if not self.argv:
            raise ProgramError("an empty command")
        self.stderr_path = stderr
        self._err: IO[bytes] | int = subprocess.DEVNULL
        if stderr is not None:
            self._err = open(stderr, "ab")  # noqa: SIM115 (closed with the program)
        try:
            self.process = spawn(
                self.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._err,
                env=dict(env),
                cwd=cwd,
                text=True,
                bufsize=1,
                start_new_session=True,  # a signal to the harness's group is not the program's
            )
        except OSError as error:
            self._close_stderr()
            why = error.strerror or error
            raise ProgramError(f"cannot start {self.argv[0]!r}: {why}") from None
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, name=f"of {self.pid}", daemon=True)
        self._reader.start()
        self.answered = 0  # answers read so far

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def ask(self, identity: str) -> None:
        """Send one request; ProgramError if the program is gone."""
        if "\n" in identity or "\r" in identity:
            raise ValueError(f"an identity is one line: {identity!r}")
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(identity + "\n")
            self.process.stdin.flush()
        except (BrokenPipeError, ValueError):
            raise self._ended() from None

    def answer(self, timeout: float) -> Answer | None:
        """The next answer, waiting at most ``timeout`` seconds (None: none yet); ProgramError
        when the program ended without one."""
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            return None
        if line is _ENDED:
            self._lines.put(_ENDED)  # and for every later call
            raise self._ended()
        self.answered += 1
        return parse_answer(line)

    def kill(self) -> None:
        """SIGKILL, now (a crash)."""
        if self.alive():
            os.killpg(self.pid, signal.SIGKILL)
        self.process.wait()
        self._reader.join(GRACE)  # it reads to the end of stdout, which is now
        for pipe in (self.process.stdin, self.process.stdout):
            with contextlib.suppress(OSError):
                if pipe is not None:
                    pipe.close()
        self._close_stderr()

    def close(self) -> None:
        """End its input, give it ``GRACE`` seconds to exit, then kill it."""
        with contextlib.suppress(OSError):
            if self.process.stdin is not None:
                self.process.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(GRACE)
        self.kill()

    def last_words(self) -> str:
        """What it said last on stderr, if that was kept: the last line naming an error (a
        runtime may end its trace with something else, as Node does with its version), else
        the last line."""
        if self.stderr_path is None or not self.stderr_path.exists():
            return ""
        lines = [line.strip() for line in self.stderr_path.read_text(errors="replace").splitlines()]
        lines = [line for line in lines if line]
        errors = [line for line in lines if ERROR_LINE.search(line)]
        return (errors or lines or [""])[-1]

    def _ended(self) -> ProgramError:
        try:
            code = self.process.wait(GRACE)
        except subprocess.TimeoutExpired:
            code = None
        said = self.last_words()
        return ProgramError(
            f"{self.argv[0]} (pid {self.pid}) ended with exit code {code}"
            + (f": {said}" if said else ""),
            code,
        )

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.put(line.rstrip("\n"))
            self._on_output()
        self._lines.put(_ENDED)
        self._on_output()

    def _close_stderr(self) -> None:
        if not isinstance(self._err, int):
            self._err.close()
            self._err = subprocess.DEVNULL


class ProgramLimiter:
    """A program presented as a ``Limiter``: ``check`` asks, and waits for its answer."""

    def __init__(self, program: Program, policy: Policy) -> None:
        self.program, self.policy = program, policy

    def check(self, identity: str, cost: int = 1) -> Decision:
        self.program.ask(asked(identity, cost))
        answer = self.program.answer(ANSWER_TIMEOUT)
        if answer is None:
            raise ProgramError(f"no answer in {ANSWER_TIMEOUT:g} s to {identity!r}")
        if answer.decision is None:
            raise ProgramError(answer.error)
        return answer.decision

    def close(self) -> None:
        self.program.close()


def program_builder(command: str) -> Callable[..., ProgramLimiter]:
    """Build with ``builder(client, policy)``: one copy of ``command`` (instance 0), its
    ``REDIS_URL`` the server ``client`` is on. It reads its own clock, so the catalogue's clock
    keywords are ignored."""
    if not shlex.split(command):
        raise ProgramError(f"{EXEC} needs a command, as in {EXEC}node my_limiter.js")

    def builder(client: Any, policy: Policy, **_clocks: Any) -> ProgramLimiter:
        return ProgramLimiter(Program(command, program_env(url_of(client), policy, 0)), policy)

    return builder
