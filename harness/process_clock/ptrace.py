"""The ptrace and wait calls the tracer needs, through ctypes: no compiler, x86-64 Linux only.

``Registers`` is the kernel's ``user_regs_struct`` for x86-64. A system call's number is in
``orig_rax`` at a stop before it runs, its arguments in ``rdi``, ``rsi``, ``rdx``, ``r10``, ``r8``
and ``r9``; setting ``orig_rax`` to -1 there skips it, and ``rax`` is then what it returns.
"""

from __future__ import annotations

import contextlib
import ctypes
import os

TRACEME, CONT, SINGLESTEP, GETREGS, SETREGS = 0, 7, 9, 12, 13
SETOPTIONS, GETEVENTMSG = 0x4200, 0x4201
# options: report forks, vforks, clones, execs and seccomp's traps; kill every tracee if the
# tracer goes
O_TRACEFORK, O_TRACEVFORK, O_TRACECLONE, O_TRACEEXEC = 0x2, 0x4, 0x8, 0x10
O_TRACESECCOMP, O_EXITKILL = 0x80, 0x100000
OPTIONS = O_TRACEFORK | O_TRACEVFORK | O_TRACECLONE | O_TRACEEXEC | O_TRACESECCOMP | O_EXITKILL
# the events a stop reports, in the status' bits 16-23
EVENT_FORK, EVENT_VFORK, EVENT_CLONE, EVENT_EXEC, EVENT_SECCOMP = 1, 2, 3, 4, 7
WALL, WNOTHREAD = 0x40000000, 0x20000000  # wait for every kind of child, of this thread only
NAMES = (  # the registers of user_regs_struct, in order
    "r15 r14 r13 r12 rbp rbx r11 r10 r9 r8 rax rcx rdx rsi rdi orig_rax rip cs eflags rsp ss "
    "fs_base gs_base ds es fs gs"
)


class Registers(ctypes.Structure):
    _fields_ = [(name, ctypes.c_ulonglong) for name in NAMES.split()]


_libc = ctypes.CDLL(None, use_errno=True)
_libc.ptrace.restype = ctypes.c_long
_libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]


def call(request: int, pid: int, address: int = 0, data: int | ctypes.c_void_p = 0) -> int:
    """``ptrace(request, pid, address, data)``; OSError if it fails."""
    ctypes.set_errno(0)
    result = _libc.ptrace(request, pid, address, data)
    if result == -1 and ctypes.get_errno():
        error = ctypes.get_errno()
        raise OSError(error, f"ptrace({request}, {pid}): {os.strerror(error)}")
    return int(result)


def registers(pid: int) -> Registers:
    regs = Registers()
    call(GETREGS, pid, 0, ctypes.cast(ctypes.byref(regs), ctypes.c_void_p))
    return regs


def set_registers(pid: int, regs: Registers) -> None:
    call(SETREGS, pid, 0, ctypes.cast(ctypes.byref(regs), ctypes.c_void_p))


def event_message(pid: int) -> int:
    """What the last event says: a new child's pid (fork, clone), a former thread's (exec)."""
    message = ctypes.c_ulong()
    call(GETEVENTMSG, pid, 0, ctypes.cast(ctypes.byref(message), ctypes.c_void_p))
    return message.value


def resume(pid: int, signal: int = 0) -> None:
    """Let a stopped tracee go on, delivering ``signal`` (0: none); a tracee gone meanwhile
    (killed) is no error."""
    with contextlib.suppress(ProcessLookupError):
        call(CONT, pid, 0, signal)
