"""A program on a clock the harness writes: started under ptrace and the seccomp filter, its
vDSO patched at every exec, its processes followed through every fork.

``ProcessClock.spawn`` starts the program through ``trampoline``, from a thread of its own: the
*tracer*. That thread is the program's parent, so only it waits for the program's processes
(``os.waitpid`` with ``__WNOTHREAD``), and it serves each of their stops:

- an exec (the first one too): the new vDSO is patched (``vdso``) and the clock file mapped into
  the process, before the program runs (the process itself is made to open, map and close the
  file: ``_map_clock``);
- a fork or a clone: the new process or thread is followed (a fork keeps the mapping);
- a system call the filter stops (``seccomp_filter``): a clock read is answered, a deadline on a
  clock the harness moves is rewritten as the real instant it stands for, a hidden file is not
  found;
- a signal: delivered, as if no one watched.

Whoever writes the clock file (``clock_file.ClockFile.set``), in any process of the harness,
moves the program's clocks: every thread of every process reads the file's page.

Between the harness's writes a clock stands still. A wait until an instant on a clock that stands
still would never end, or end at once: so the tracer tells the kernel the real instant that is
as far from now as the deadline is from the program's now. ``time.sleep(1)`` then sleeps one real
second, and a timer due in one virtual second is looked at again after one real second.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import shutil
import signal
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ratelimit_harness.harness.process_clock import ptrace, seccomp_filter, trampoline, vdso
from ratelimit_harness.harness.process_clock.clock_file import NANOS, SIZE, ClockFile

TRAMPOLINE = Path(trampoline.__file__)
# the clocks of the time of day; the others the filter stops are monotonic
REALTIME_CLOCKS = frozenset({0, 5, 8, 11})  # REALTIME, REALTIME_COARSE, REALTIME_ALARM, TAI
FUTEX_CLOCK_REALTIME, FUTEX_LOCK_PI = 256, 6
OPENAT, MMAP, CLOSE = 257, 9, 3
AT_FDCWD, O_RDONLY_CLOEXEC, PROT_READ, MAP_SHARED = -100, 0o2000000, 1, 1


@dataclass
class _Process:
    """One process of the program: its memory, and where its vDSO's replacement is."""

    memory: int  # an open /proc/PID/mem
    base: int  # the vDSO's start
    end: int  # and its end
    layout: vdso.Layout
    next_slot: itertools.cycle[int]

    def write(self, address: int, data: bytes) -> None:
        os.pwrite(self.memory, data, address)

    def read(self, address: int, size: int) -> bytes:
        return os.pread(self.memory, size, address)

    def slot(self) -> int:
        """The address of a slot for a rewritten deadline: each in turn, so one is reused only
        after every other was (long after the kernel read it)."""
        return self.base + next(self.next_slot)

    def close(self) -> None:
        os.close(self.memory)


class TracedPopen(subprocess.Popen[Any]):
    """A Popen whose exit only the tracer waits for: no other thread may call ``waitpid`` on a
    traced process, or it would take the stops meant for the tracer."""

    _tracer: ProcessClock

    def _internal_poll(self, _deadstate: object = None, **_: object) -> int | None:
        return self._tracer.exit_code

    def _wait(self, timeout: float | None) -> int:
        if not self._tracer.exited.wait(timeout):
            assert timeout is not None
            raise subprocess.TimeoutExpired(self.args, timeout)
        code = self._tracer.exit_code
        assert code is not None
        self.returncode = code
        return code


class ProcessClock:
    """A program on the clock file ``clock``, and every process it starts (see the module's
    text). ``hidden``: paths its opens do not find (``ENOENT``)."""

    def __init__(self, clock: ClockFile, *, hidden: Sequence[str] = ()) -> None:
        self.clock = clock
        self.hidden = frozenset(hidden)
        self.exited = threading.Event()
        self.exit_code: int | None = None
        self.refused = ""  # why the program was killed, if its clock could not be controlled
        self._processes: dict[int, _Process] = {}  # by process id
        self._threads: dict[int, int] = {}  # each thread's process
        self._fresh: set[int] = set()  # new threads and processes whose first stop is to come
        self._leader = 0
        self._popen: TracedPopen | None = None
        self._failed: BaseException | None = None

    def spawn(self, argv: Sequence[str], **popen: Any) -> TracedPopen:
        """Start ``argv`` (as ``subprocess.Popen(argv, **popen)`` would) on this clock."""
        found = shutil.which(argv[0], path=(popen.get("env") or os.environ).get("PATH"))
        if found is None:
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), argv[0])
        started = threading.Event()
        filter_code = seccomp_filter.program(opens=bool(self.hidden)).hex()
        command = [sys.executable, "-S", str(TRAMPOLINE), filter_code, *argv]

        def serve() -> None:
            try:
                self._popen = TracedPopen(command, **popen)
                self._popen._tracer = self
                self._leader = self._popen.pid
            except BaseException as error:  # handed to the caller
                self._failed = error
                return
            finally:
                started.set()
            self._serve()

        threading.Thread(target=serve, name=f"tracer of {argv[0]}", daemon=True).start()
        started.wait()
        if self._failed is not None:
            raise self._failed
        assert self._popen is not None
        return self._popen

    # --- the tracer's thread ---------------------------------------------------------------

    def _serve(self) -> None:
        """Serve the program's stops until none of its processes is left. However this ends,
        the program has ended for whoever waits for it: with its exit status where the tracer
        saw it, else as killed (a waiter must never wait for a tracer that is gone)."""
        try:
            while True:
                try:
                    pid, status = os.waitpid(-1, ptrace.WALL | ptrace.WNOTHREAD)
                except ChildProcessError:
                    break
                try:
                    self._on_status(pid, status)
                except Exception as error:  # a bug here must not leave the program stopped
                    self._refuse(f"the tracer failed: {error!r}")
        finally:
            if self.exit_code is None:
                self.exit_code = -signal.SIGKILL
            self.exited.set()
            for process in self._processes.values():
                with contextlib.suppress(OSError):
                    process.close()
            self._processes.clear()

    def _on_status(self, pid: int, status: int) -> None:
        if os.WIFEXITED(status) or os.WIFSIGNALED(status):
            self._gone(pid, status)
            return
        if not os.WIFSTOPPED(status):
            return
        stop, event = os.WSTOPSIG(status), status >> 16
        if event in (ptrace.EVENT_FORK, ptrace.EVENT_VFORK, ptrace.EVENT_CLONE):
            child = ptrace.event_message(pid)
            if child not in self._threads:  # else its first stop came first
                self._follow(child)
                self._fresh.add(child)
        elif event == ptrace.EVENT_EXEC or (pid == self._leader and pid not in self._threads):
            first = pid not in self._threads
            if first:  # the first exec, stopped by a SIGTRAP: the options only now
                ptrace.call(ptrace.SETOPTIONS, pid, 0, ptrace.OPTIONS)
            self._patch(pid, inside_exec=not first)
        elif event == ptrace.EVENT_SECCOMP:
            self._system_call(pid)
        elif pid not in self._threads:
            self._follow(pid)  # a new thread or process, at its first stop
        elif stop == signal.SIGSTOP and pid in self._fresh:
            self._fresh.discard(pid)  # its first stop, after its parent's event
        else:
            ptrace.resume(pid, stop)  # a signal of the program's own
            return
        ptrace.resume(pid)

    def _follow(self, pid: int) -> None:
        """A new thread or process, followed (a process keeps its parent's vDSO and mapping)."""
        with contextlib.suppress(OSError):
            self._threads[pid] = _thread_group(pid)

    def _patch(self, pid: int, *, inside_exec: bool) -> None:
        """A process that has just exec'd: its vDSO replaced, the clock file mapped.
        ``inside_exec``: stopped inside the exec call, which has yet to return (an event's
        stop), not after it (the first exec's SIGTRAP)."""
        self._threads[pid] = pid
        old = self._processes.pop(pid, None)
        if old is not None:
            old.close()
        try:
            process = self._process(pid)
            if process is None:
                raise vdso.Unpatchable("the program has no vDSO")
            for offset, data in process.layout.writes():
                process.write(process.base + offset, data)
            if inside_exec:  # a call made from here would get the exec's result as its number
                self._step(pid)
            page = self._map_clock(pid, process)
            process.write(process.base + process.layout.page, struct.pack("<Q", page))
        except (vdso.Unpatchable, OSError) as why:
            self._refuse(str(why))

    def _process(self, pid: int) -> _Process | None:
        """The process ``pid`` belongs to, as the tracer knows it (found at first use)."""
        owner = self._threads.get(pid, pid)
        process = self._processes.get(owner)
        if process is None:
            where = vdso.mapped(owner)
            if where is None:
                return None
            memory = os.open(f"/proc/{owner}/mem", os.O_RDWR)
            layout = vdso.layout(os.pread(memory, where[1] - where[0], where[0]))
            process = _Process(memory, *where, layout, itertools.cycle(layout.slots))
            self._processes[owner] = process
        return process

    def _map_clock(self, pid: int, process: _Process) -> int:
        """The clock file's first page mapped into the stopped process ``pid``, read-only and
        shared: its address. The process itself opens, maps and closes the file, each call made
        at the replacement's ``syscall`` instruction, its registers restored after."""
        saved = ptrace.registers(pid)
        name = os.fsencode(os.path.abspath(self.clock.path)) + b"\0"
        room = process.layout.slots  # all of them: nothing waits on a deadline in a new image
        if len(name) > room.stop - room.start:
            raise vdso.Unpatchable(f"the clock file's path is too long: {self.clock.path}")
        path = process.base + room.start
        process.write(path, name)
        try:
            descriptor = self._call(pid, process, OPENAT, AT_FDCWD, path, O_RDONLY_CLOEXEC)
            if descriptor < 0:
                raise OSError(
                    -descriptor,
                    f"the program could not open its clock file: {os.strerror(-descriptor)}",
                )
            page = self._call(pid, process, MMAP, 0, SIZE, PROT_READ, MAP_SHARED, descriptor, 0)
            self._call(pid, process, CLOSE, descriptor)
            if -4096 < page < 0:
                raise OSError(
                    -page, f"the program could not map its clock file: {os.strerror(-page)}"
                )
            return page
        finally:
            ptrace.set_registers(pid, saved)

    def _call(self, pid: int, process: _Process, number: int, *arguments: int) -> int:
        regs = ptrace.registers(pid)
        regs.rip = process.base + process.layout.system_call
        regs.rax = regs.orig_rax = number
        for name, value in zip(("rdi", "rsi", "rdx", "r10", "r8", "r9"), arguments, strict=False):
            setattr(regs, name, value & ((1 << 64) - 1))
        ptrace.set_registers(pid, regs)
        self._step(pid)
        result = int(ptrace.registers(pid).rax)
        return result - (1 << 64) if result >= 1 << 63 else result

    def _step(self, pid: int) -> None:
        """One step of ``pid``: to the end of the call it is in, or over one instruction (a
        stop of the filter's on the way is let through)."""
        while True:
            ptrace.call(ptrace.SINGLESTEP, pid)
            _, status = os.waitpid(pid, ptrace.WALL)
            if not os.WIFSTOPPED(status):
                raise OSError(errno.ESRCH, "the program ended while its clock was being set up")
            if status >> 16 != ptrace.EVENT_SECCOMP:
                return

    def _gone(self, pid: int, status: int) -> None:
        self._threads.pop(pid, None)
        if pid == self._leader:
            self.exit_code = os.waitstatus_to_exitcode(status)
            if self.exit_code == trampoline.REFUSED and not self.refused:
                self.refused = "the trampoline was refused (see the program's stderr)"
            self.exited.set()
        process = self._processes.pop(pid, None)
        if process is not None:
            process.close()

    def _refuse(self, why: str) -> None:
        self.refused = self.refused or why
        for pid in list(self._threads) or [self._leader]:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)

    def _system_call(self, pid: int) -> None:
        process = self._process(pid)
        if process is None:
            return
        regs = ptrace.registers(pid)
        number = regs.orig_rax
        if number == seccomp_filter.CLOCK_GETTIME:
            now = self._now(regs.rdi)
            if regs.rsi:
                process.write(regs.rsi, struct.pack("<qq", *divmod(now, NANOS)))
            _skip(pid, regs, 0)
        elif number == seccomp_filter.GETTIMEOFDAY:
            seconds, nanos = divmod(self._now(0), NANOS)
            if regs.rdi:
                process.write(regs.rdi, struct.pack("<qq", seconds, nanos // 1000))
            if regs.rsi:
                process.write(regs.rsi, bytes(8))
            _skip(pid, regs, 0)
        elif number == seccomp_filter.TIME:
            seconds = self._now(0) // NANOS
            if regs.rdi:
                process.write(regs.rdi, struct.pack("<q", seconds))
            _skip(pid, regs, seconds)
        elif number == seccomp_filter.CLOCK_NANOSLEEP:
            regs.rdx = self._real_deadline(process, regs.rdi, regs.rdx) or regs.rdx
            ptrace.set_registers(pid, regs)
        elif number == seccomp_filter.FUTEX:
            command = regs.rsi & seccomp_filter.FUTEX_COMMAND
            realtime = regs.rsi & FUTEX_CLOCK_REALTIME or command == FUTEX_LOCK_PI
            regs.r10 = self._real_deadline(process, 0 if realtime else 1, regs.r10) or regs.r10
            ptrace.set_registers(pid, regs)
        elif number in (seccomp_filter.OPEN, seccomp_filter.OPENAT):
            path = _string(process, regs.rdi if number == seccomp_filter.OPEN else regs.rsi)
            if path in self.hidden:
                _skip(pid, regs, -errno.ENOENT)

    def _virtual(self, clock: int) -> int:
        realtime, monotonic = self.clock.read()
        return realtime if clock in REALTIME_CLOCKS else monotonic

    def _now(self, clock: int) -> int:
        virtual = self._virtual(clock)
        return virtual if virtual >= 0 else time.clock_gettime_ns(clock)

    def _real_deadline(self, process: _Process, clock: int, address: int) -> int:
        """The address of a deadline, in a slot of the vDSO, that is as far from the real now
        as the one at ``address`` is from the program's now (0: nothing to rewrite)."""
        virtual = self._virtual(clock)
        if virtual < 0 or not address or process.base <= address < process.end:
            return 0  # real time; or already rewritten (a call restarted after a signal)
        seconds, nanos = struct.unpack("<qq", process.read(address, 16))
        deadline = seconds * NANOS + nanos - virtual + time.clock_gettime_ns(clock)
        slot = process.slot()
        process.write(slot, struct.pack("<qq", *divmod(max(deadline, 0), NANOS)))
        return slot


def _skip(pid: int, regs: ptrace.Registers, result: int) -> None:
    regs.orig_rax = (1 << 64) - 1
    regs.rax = result & ((1 << 64) - 1)
    ptrace.set_registers(pid, regs)


def _string(process: _Process, address: int) -> str:
    data = process.read(address, 256)
    return data.split(b"\0", 1)[0].decode(errors="replace")


def _thread_group(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Tgid:"):
            return int(line.split()[1])
    raise OSError(f"no Tgid for {pid}")
