"""The vDSO's clock functions, replaced by ones that read the time from memory the harness
writes.

The *vDSO* is a small shared library the kernel maps into every process. ``clock_gettime``,
``gettimeofday`` and ``time`` run there, without entering the kernel: glibc, musl, Go's runtime
and the JVM all call them. So replacing those three functions moves every clock a program reads,
in every thread, whatever its language.

The replacement (``CODE``, assembled from ``vdso_clock.S``, which says what each instruction
does) is written over the body of ``clock_gettime``. ``gettimeofday`` and ``time`` become a
jump into it. It reads two instants from the program's *clock page*, a page of the clock file
(``clock_file``) that the tracer maps into the process: the time of day, and the monotonic
clocks. Until the page is mapped, or where an instant is negative, that clock keeps real time:
the function then asks the kernel, marking the call as its own (``seccomp_filter.REAL_TIME``).
The body of ``gettimeofday``, unused after that, holds the slots: room for deadlines the
tracer rewrites for the kernel, and for the clock file's name while the tracer maps it.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from pathlib import Path

# vdso_clock.S, assembled: clock_gettime at 0, then gettimeofday, time, a system call for the
# tracer, and the address of the clock page (8 bytes, 0 until the tracer maps the page)
CODE = bytes.fromhex(
    "83ff00743083ff05742b83ff0b742683ff01743283ff04742d83ff06742883ff07742348ba454d49544c4145"
    "52b8e40000000f05c3488b05cc0000004885c074e2488b00eb10488b05bb0000004885c074d1488b40084885"
    "c078c831d2b900ca9a3b48f7f14889064889560831c0c3488b05920000004885c07438488b004885c0783048"
    "85ff741c31d2b900ca9a3b48f7f148890789d031d2b9e8030000f7f1488947084885f6740748c70600000000"
    "31c0c348ba454d49544c414552b8600000000f05c3488b053c0000004885c0741b488b004885c0781331d2b9"
    "00ca9a3b48f7f14885ff7403488907c348be454d49544c414552b8c90000000f05c30f05cc0f1f8000000000"
    "0000000000000000"
)
GETTIMEOFDAY, TIME, SYSTEM_CALL, PAGE = 0x6F, 0xC5, 0xFE, 0x108
SLOT = 32  # bytes of one slot: a struct timespec, or an itimerspec
FUNCTIONS = ("clock_gettime", "gettimeofday", "time")


class Unpatchable(Exception):
    """The vDSO of this process cannot take the replacement, with why."""


@dataclass(frozen=True)
class Layout:
    """Where, in one vDSO, the replacement goes: offsets from the vDSO's start."""

    clock_gettime: int
    clock_gettime_size: int
    gettimeofday: int
    gettimeofday_size: int
    time: int

    @property
    def page(self) -> int:
        """Where the clock page's address goes."""
        return self.clock_gettime + PAGE

    @property
    def system_call(self) -> int:
        """A ``syscall`` instruction, followed by ``int3``."""
        return self.clock_gettime + SYSTEM_CALL

    @property
    def slots(self) -> range:
        """The offsets of the slots for rewritten deadlines, in ``gettimeofday``'s old body
        (``stop``: where the last one ends)."""
        first = self.gettimeofday + 16
        count = (self.gettimeofday_size - 16) // SLOT
        return range(first, first + count * SLOT, SLOT)

    def writes(self) -> list[tuple[int, bytes]]:
        """What to write, at which offsets, to replace the three functions (the page's address
        still 0: they keep real time until it is written)."""
        return [
            (self.clock_gettime, CODE),
            (self.gettimeofday, _jump(self.gettimeofday, self.clock_gettime + GETTIMEOFDAY)),
            (self.time, _jump(self.time, self.clock_gettime + TIME)),
        ]


def _jump(at: int, to: int) -> bytes:
    return b"\xe9" + struct.pack("<i", to - (at + 5))  # jmp rel32


def layout(image: bytes) -> Layout:
    """The layout of the vDSO whose bytes are ``image`` (an x86-64 ELF shared object)."""
    if image[:4] != b"\x7fELF" or image[4] != 2 or struct.unpack_from("<H", image, 18)[0] != 62:
        raise Unpatchable("the vDSO is not x86-64 ELF: only x86-64 programs are covered")
    found = _symbols(image)
    missing = [name for name in FUNCTIONS if name not in found]
    if missing:
        raise Unpatchable(f"the vDSO has no {', '.join(missing)}")
    (cgt, cgt_size), (gtod, gtod_size), (time, _) = (found[name] for name in FUNCTIONS)
    if cgt_size < len(CODE) or gtod_size < 16 + 4 * SLOT:
        raise Unpatchable("the vDSO's clock functions are too small to hold the replacement")
    return Layout(cgt, cgt_size, gtod, gtod_size, time)


def _symbols(image: bytes) -> dict[str, tuple[int, int]]:
    """Each function the vDSO exports (``__vdso_`` names folded in): (offset, size)."""
    shoff = struct.unpack_from("<Q", image, 0x28)[0]
    entry_size, count = struct.unpack_from("<HH", image, 0x3A)
    sections = [
        struct.unpack_from("<IIQQQQIIQQ", image, shoff + i * entry_size) for i in range(count)
    ]
    found: dict[str, tuple[int, int]] = {}
    for _, kind, _, _, offset, size, link, *_ in sections:
        if kind != 11:  # SHT_DYNSYM
            continue
        names = sections[link][4]
        for at in range(offset, offset + size, 24):
            name_at, info, _, _, value, length = struct.unpack_from("<IBBHQQ", image, at)
            name = image[names + name_at : image.index(b"\0", names + name_at)].decode()
            if info & 0xF == 2 and value:  # STT_FUNC
                found[name.removeprefix("__vdso_")] = (value, length)
    return found


def mapped(pid: int | str) -> tuple[int, int] | None:
    """Where the vDSO is in process ``pid``'s memory (start, end), if it has one."""
    maps = Path(f"/proc/{pid}/maps").read_text()
    match = re.search(r"^([0-9a-f]+)-([0-9a-f]+) .*\[vdso\]$", maps, re.MULTILINE)
    return (int(match[1], 16), int(match[2], 16)) if match else None
