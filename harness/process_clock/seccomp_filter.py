"""The seccomp filter a traced program runs under: which of its system calls stop at the tracer.

A program that asks the kernel for the time directly, not through the vDSO, is stopped there
and answered by the tracer (``SECCOMP_RET_TRACE``). So is a wait until an instant (a deadline
on a clock the harness moves), so that the tracer can tell the kernel the real instant. Every
other call runs untouched, at full speed:

- ``clock_gettime`` on a clock of the time of day or a monotonic one, ``gettimeofday``, ``time``;
  but not when the patched vDSO itself asks for the real time (a clock that keeps real time): it
  marks its call with ``REAL_TIME`` in an argument the call does not use;
- ``clock_nanosleep`` until an instant (``TIMER_ABSTIME``);
- ``futex`` waits with a deadline, which are absolute (``FUTEX_WAIT_BITSET``, ``FUTEX_LOCK_PI``,
  ``FUTEX_LOCK_PI2``, ``FUTEX_WAIT_REQUEUE_PI``); ``FUTEX_WAIT``'s timeout is relative;
- with ``opens``, ``open`` and ``openat`` (the server's, to hide one file from it).

The filter is a classic BPF program (``struct sock_filter``): eight bytes an instruction.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

AUDIT_ARCH_X86_64 = 0xC000003E
X32_BIT = 0x40000000  # x32 system calls: let through
REAL_TIME = 0x5245414C54494D45  # "EMITLAER": what the patched vDSO puts in an unused argument
ALLOW, TRACE = 0x7FFF0000, 0x7FF00000
CLOCK_GETTIME, GETTIMEOFDAY, TIME, CLOCK_NANOSLEEP, FUTEX, OPEN, OPENAT = (
    228,
    96,
    201,
    230,
    202,
    2,
    257,
)
# the clocks a program tells time by: REALTIME, MONOTONIC, MONOTONIC_RAW, REALTIME_COARSE,
# MONOTONIC_COARSE, BOOTTIME, TAI
TIME_CLOCKS = (0, 1, 4, 5, 6, 7, 11)
TIMED_FUTEX = (9, 6, 13, 11)  # WAIT_BITSET, LOCK_PI, LOCK_PI2, WAIT_REQUEUE_PI
FUTEX_COMMAND = 0x7F  # the op without FUTEX_PRIVATE_FLAG (128) and FUTEX_CLOCK_REALTIME (256)

LD_W_ABS, ALU_AND_K, RET_K = 0x20, 0x54, 0x06
JEQ, JSET, JGE = 0x15, 0x45, 0x35


def _arg(n: int, high: bool = False) -> int:
    """Where argument ``n``'s low (or high) 32 bits are in ``struct seccomp_data``."""
    return 16 + 8 * n + 4 * high


@dataclass
class _Jump:
    code: int
    k: int
    true: str | None  # a label, or None for the next instruction
    false: str | None


def program(opens: bool = False) -> bytes:
    """The filter, assembled."""
    lines: list[tuple[str, int, int] | _Jump | str] = []  # (code, k, 0) | jump | label

    def load(offset: int) -> None:
        lines.append(("ld", LD_W_ABS, offset))

    def jump(code: int, k: int, true: str | None, false: str | None = None) -> None:
        lines.append(_Jump(code, k, true, false))

    def ret(value: int) -> None:
        lines.append(("ret", RET_K, value))

    load(4)  # arch
    jump(JEQ, AUDIT_ARCH_X86_64, None, "allow")
    load(0)  # nr
    jump(JGE, X32_BIT, "allow")
    jump(JEQ, CLOCK_GETTIME, "clock_gettime")
    jump(JEQ, GETTIMEOFDAY, "gettimeofday")
    jump(JEQ, TIME, "time")
    jump(JEQ, CLOCK_NANOSLEEP, "clock_nanosleep")
    jump(JEQ, FUTEX, "futex")
    if opens:
        jump(JEQ, OPEN, "trace")
        jump(JEQ, OPENAT, "trace")
    ret(ALLOW)
    # a call the patched vDSO marked (argument ``n`` is REAL_TIME) runs; else go on to ``then``
    for label, n, then in (
        ("clock_gettime", 2, "clock_id"),
        ("gettimeofday", 2, "trace"),
        ("time", 1, "trace"),
    ):
        lines.append(label)
        load(_arg(n))
        jump(JEQ, REAL_TIME & 0xFFFFFFFF, None, then)
        load(_arg(n, high=True))
        jump(JEQ, REAL_TIME >> 32, "allow", then)
    lines.append("clock_id")
    load(_arg(0))
    for clock in TIME_CLOCKS:
        jump(JEQ, clock, "trace")
    ret(ALLOW)
    lines.append("clock_nanosleep")
    load(_arg(1))
    jump(JSET, 1, "trace", "allow")  # TIMER_ABSTIME
    lines.append("futex")
    load(_arg(3))  # the timeout's address: a wait without one has no deadline
    jump(JEQ, 0, None, "futex_op")
    load(_arg(3, high=True))
    jump(JEQ, 0, "allow")
    lines.append("futex_op")
    load(_arg(1))
    lines.append(("and", ALU_AND_K, FUTEX_COMMAND))
    for command in TIMED_FUTEX:
        jump(JEQ, command, "trace")
    ret(ALLOW)
    lines.append("trace")
    ret(TRACE)
    lines.append("allow")
    ret(ALLOW)
    return _assemble(lines)


def _assemble(lines: list[tuple[str, int, int] | _Jump | str]) -> bytes:
    where: dict[str, int] = {}
    count = 0
    for line in lines:
        if isinstance(line, str):
            where[line] = count
        else:
            count += 1
    out, index = bytearray(), 0
    for line in lines:
        if isinstance(line, str):
            continue
        if isinstance(line, _Jump):
            true = where[line.true] - index - 1 if line.true else 0
            false = where[line.false] - index - 1 if line.false else 0
            if not (0 <= true < 256 and 0 <= false < 256):
                raise ValueError("a jump of the filter is out of reach")
            out += struct.pack("<HBBI", line.code, true, false, line.k)
        else:
            out += struct.pack("<HBBI", line[1], 0, 0, line[2])
        index += 1
    return bytes(out)
