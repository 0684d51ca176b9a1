"""Programs on a clock file, in every runtime: each reads the instants written, the time of day
and the monotonic clock, in every thread, after fork and exec, by the vDSO or by a system call;
a deadline on a clock that stands still neither spins nor ends early; the program's own exit is
its parent's to see."""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ratelimit_harness.harness.process_clock import NANOS, ClockFile, ProcessClock, probe
from ratelimit_harness.harness.process_clock.tracer import TracedPopen
from tests.harness.support import TIMEOUT, read_line
from tests.limiters.go_programs import build

CLOCKS = Path(__file__).parents[2] / "limiters" / "programs" / "clocks"
T = 1_800_000_000 * NANOS  # 2027-01-15 08:00:00 UTC
MOVE = 10_500_000_000  # 10.5 s, in nanoseconds


def required(tool: str) -> str:
    """The tool's path, else skip (or fail where every path is required, as in CI)."""
    found = shutil.which(tool)
    if found is None:
        if os.environ.get("HARNESS_REQUIRE_ALL_PATHS") == "1":
            pytest.fail(f"{tool} is required")
        pytest.skip(f"no {tool} on PATH")
    return found


@pytest.fixture(scope="module")
def go_programs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("go"))


@pytest.fixture
def clock(tmp_path: Path) -> ClockFile:
    assert probe() == ""
    file = ClockFile.create(tmp_path)
    file.set(T, T)
    return file


@pytest.fixture
def started() -> Iterator[list[subprocess.Popen[str]]]:
    processes: list[subprocess.Popen[str]] = []
    yield processes
    for process in processes:
        if process.poll() is None:
            process.kill()
        process.wait(TIMEOUT)
        for pipe in (process.stdin, process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()


def spawn(clock: ClockFile, argv: list[str], started: list[subprocess.Popen[str]]) -> TracedPopen:
    pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    process = ProcessClock(clock).spawn(argv, text=True, **pipes)
    started.append(process)
    return process


def ask(process: subprocess.Popen[str]) -> tuple[int, int]:
    """One reading: the time of day in ms, the monotonic ns since the first reading."""
    assert process.stdin is not None
    assert process.stdout is not None
    process.stdin.write("now\n")
    process.stdin.flush()
    wall, monotonic = read_line(process.stdout).split()
    return int(wall), int(monotonic)


def commands(go_programs: Path) -> dict[str, list[str]]:
    return {
        "python": [sys.executable, str(CLOCKS / "reader.py")],
        "node": [required("node"), str(CLOCKS / "reader.js")],
        "go": [str(go_programs / "clock-reader")],
        "java": [required("java"), str(CLOCKS / "Reader.java")],
    }


@pytest.mark.slow
@pytest.mark.parametrize("runtime", ["python", "node", "go", "java"])
def test_each_runtime_reads_the_instants_written_and_follows_each_move(
    runtime: str, go_programs: Path, clock: ClockFile, started: list[subprocess.Popen[str]]
) -> None:
    """The time of day and the monotonic clock, as the runtime's own calls read them (Python's
    time.time_ns, Node's Date.now and hrtime, Go's time.Now, Java's currentTimeMillis and
    nanoTime): frozen at the instant written, then moved by 10.5 s, forth and back."""
    process = spawn(clock, commands(go_programs)[runtime], started)
    assert ask(process) == (T // 1_000_000, 0)
    assert ask(process) == (T // 1_000_000, 0)  # frozen until the next write
    clock.set(T + MOVE, T + MOVE)
    assert ask(process) == ((T + MOVE) // 1_000_000, MOVE)
    clock.set(T - MOVE, T + 2 * MOVE)  # the time of day back, the monotonic clock on
    assert ask(process) == ((T - MOVE) // 1_000_000, 2 * MOVE)
    assert process.stdin is not None
    process.stdin.close()
    assert process.wait(TIMEOUT) == 0


PROBES = """
import ctypes, os, sys, threading, time
libc = ctypes.CDLL(None, use_errno=True)
class Timespec(ctypes.Structure):
    _fields_ = [("sec", ctypes.c_long), ("nsec", ctypes.c_long)]
def direct(clock):  # the kernel asked directly, past the vDSO: syscall(SYS_clock_gettime)
    spec = Timespec()
    assert libc.syscall(228, clock, ctypes.byref(spec)) == 0
    return spec.sec * 10**9 + spec.nsec
seen = {"vdso": time.time_ns(), "direct": direct(0), "direct_monotonic": direct(1),
        "time": libc.time(None) * 10**9}
thread = threading.Thread(target=lambda: seen.__setitem__("thread", time.time_ns()))
thread.start(); thread.join()
read, write = os.pipe()
if os.fork() == 0:
    os.write(write, str(time.time_ns()).encode()); os._exit(0)
os.wait(); seen["fork"] = int(os.read(read, 64))
seen["exec"] = int(os.popen(sys.executable + " -S -c 'import time; print(time.time_ns())'").read())
try:
    open("/proc/cpuinfo").close(); seen["cpuinfo"] = 1
except FileNotFoundError:
    seen["cpuinfo"] = 0
print(seen)
"""


def test_every_thread_fork_exec_and_direct_call_reads_the_file(
    clock: ClockFile, started: list[subprocess.Popen[str]]
) -> None:
    clock.set(T + 123_456_789_000, T + 7_000)
    tracer = ProcessClock(clock, hidden=("/proc/cpuinfo",))
    process = tracer.spawn([sys.executable, "-c", PROBES], stdout=subprocess.PIPE, text=True)
    started.append(process)
    out, _ = process.communicate(timeout=TIMEOUT)
    assert process.returncode == 0
    now = T + 123_456_789_000
    assert eval(out) == {  # a dict the test's own program printed
        "vdso": now,
        "direct": now,
        "direct_monotonic": T + 7_000,
        "time": now // NANOS * NANOS,
        "thread": now,
        "fork": now,
        "exec": now,
        "cpuinfo": 0,
    }


WAIT = """
import threading, time
print("ready", flush=True)
time.sleep(0.3)  # clock_nanosleep until an instant on the monotonic clock
threading.Event().wait(0.3)  # a futex wait until an instant
print("done", flush=True)
"""


def test_a_deadline_on_a_clock_that_stands_still_is_told_to_the_kernel_in_real_time(
    clock: ClockFile, started: list[subprocess.Popen[str]]
) -> None:
    """Waits until an instant of a clock that stands still: the kernel is told the real instant
    as far away, so each wait lasts its length in real time, neither ending at once (the
    instant long past in real time) nor never (far ahead), nor spinning."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    process = spawn(clock, [sys.executable, "-c", WAIT], started)
    assert process.stdout is not None
    assert read_line(process.stdout).strip() == "ready"
    waited = time.monotonic()
    assert read_line(process.stdout).strip() == "done"
    waited = time.monotonic() - waited
    assert process.wait(TIMEOUT) == 0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert 0.55 < waited < 5
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    assert cpu < 0.5  # Python's start-up and two wake-ups, not 0.6 s of spinning


def test_the_exit_code_and_a_kill_are_the_programs_own(
    clock: ClockFile, started: list[subprocess.Popen[str]]
) -> None:
    exits = spawn(clock, [sys.executable, "-c", "raise SystemExit(3)"], started)
    assert exits.wait(TIMEOUT) == 3
    assert exits.poll() == 3
    sleeps = spawn(clock, [sys.executable, "-c", "import sys; sys.stdin.read()"], started)
    with pytest.raises(subprocess.TimeoutExpired):
        sleeps.wait(0.2)
    sleeps.kill()
    assert sleeps.wait(TIMEOUT) == -9


def test_a_missing_program_is_not_found_as_popen_says_it(clock: ClockFile) -> None:
    with pytest.raises(FileNotFoundError):
        ProcessClock(clock).spawn(["no-such-program-anywhere"])
