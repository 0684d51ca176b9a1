"""The seccomp filter, run by a small classic-BPF interpreter: which system calls stop at the
tracer, and which run untouched."""

from __future__ import annotations

import struct

import pytest

from ratelimit_harness.harness.process_clock import seccomp_filter as f

OTHER_ARCH = 0x40000003  # i386


def run(program: bytes, nr: int, *args: int, arch: int = f.AUDIT_ARCH_X86_64) -> int:
    """What ``program`` returns for system call ``nr`` with ``args`` (struct seccomp_data)."""
    data = struct.pack("<iIQ6Q", nr, arch, 0, *(list(args) + [0] * (6 - len(args))))
    instructions = [struct.unpack_from("<HBBI", program, at) for at in range(0, len(program), 8)]
    accumulator, pc = 0, 0
    for _ in range(len(instructions)):  # no loops in classic BPF: each runs at most once
        code, true, false, k = instructions[pc]
        if code == f.LD_W_ABS:
            accumulator = int(struct.unpack_from("<I", data, k)[0])
        elif code == f.ALU_AND_K:
            accumulator &= k
        elif code == f.RET_K:
            return int(k)
        else:
            taken = {
                f.JEQ: accumulator == k,
                f.JSET: bool(accumulator & k),
                f.JGE: accumulator >= k,
            }[code]
            pc += true if taken else false
        pc += 1
    raise AssertionError("the filter ran off its end")


PROGRAM = f.program()
CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_PROCESS_CPUTIME_ID, CLOCK_BOOTTIME = 0, 1, 2, 7
FUTEX_WAIT, FUTEX_WAIT_BITSET, FUTEX_PRIVATE, FUTEX_CLOCK_REALTIME = 0, 9, 128, 256


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        ((f.CLOCK_GETTIME, CLOCK_REALTIME, 0x7FFF0000), f.TRACE),
        ((f.CLOCK_GETTIME, CLOCK_MONOTONIC, 0x7FFF0000), f.TRACE),
        ((f.CLOCK_GETTIME, CLOCK_BOOTTIME, 0x7FFF0000), f.TRACE),
        ((f.CLOCK_GETTIME, CLOCK_PROCESS_CPUTIME_ID, 0x7FFF0000), f.ALLOW),  # CPU time: real
        ((f.CLOCK_GETTIME, CLOCK_REALTIME, 0x7FFF0000, f.REAL_TIME), f.ALLOW),  # the vDSO's own
        ((f.CLOCK_GETTIME, CLOCK_REALTIME, 0, f.REAL_TIME & 0xFFFFFFFF), f.TRACE),  # half a mark
        ((f.GETTIMEOFDAY, 0x7FFF0000, 0), f.TRACE),
        ((f.GETTIMEOFDAY, 0x7FFF0000, 0, f.REAL_TIME), f.ALLOW),
        ((f.TIME, 0), f.TRACE),
        ((f.TIME, 0, f.REAL_TIME), f.ALLOW),
        ((f.CLOCK_NANOSLEEP, CLOCK_MONOTONIC, 1, 0x7FFF0000), f.TRACE),  # until an instant
        ((f.CLOCK_NANOSLEEP, CLOCK_MONOTONIC, 0, 0x7FFF0000), f.ALLOW),  # for a while
        ((f.FUTEX, 0x7FFF0000, FUTEX_WAIT_BITSET | FUTEX_PRIVATE, 0, 0x7FFF0010), f.TRACE),
        ((f.FUTEX, 0x7FFF0000, FUTEX_WAIT_BITSET | FUTEX_CLOCK_REALTIME, 0, 1 << 40), f.TRACE),
        ((f.FUTEX, 0x7FFF0000, FUTEX_WAIT_BITSET | FUTEX_PRIVATE, 0, 0), f.ALLOW),  # no deadline
        ((f.FUTEX, 0x7FFF0000, FUTEX_WAIT | FUTEX_PRIVATE, 0, 0x7FFF0010), f.ALLOW),  # relative
        ((f.OPENAT, 0xFFFFFF9C, 0x7FFF0000), f.ALLOW),
        ((0, 3, 0x7FFF0000, 10), f.ALLOW),  # read
        ((f.X32_BIT | f.CLOCK_GETTIME, CLOCK_REALTIME), f.ALLOW),  # x32: not ours
    ],
)
def test_which_calls_stop_at_the_tracer(call: tuple[int, ...], expected: int) -> None:
    assert run(PROGRAM, *call) == expected


def test_another_architectures_calls_all_run() -> None:
    assert run(PROGRAM, f.CLOCK_GETTIME, CLOCK_REALTIME, arch=OTHER_ARCH) == f.ALLOW


def test_opens_stop_only_where_a_file_is_hidden() -> None:
    hiding = f.program(opens=True)
    assert run(hiding, f.OPENAT, 0xFFFFFF9C, 0x7FFF0000) == f.TRACE
    assert run(hiding, f.OPEN, 0x7FFF0000) == f.TRACE
    assert run(hiding, f.CLOCK_GETTIME, CLOCK_REALTIME) == f.TRACE
    assert run(hiding, 0, 3) == f.ALLOW
