"""The replacement of the vDSO's clock functions: the bytes the harness writes are its assembly
source's, and they land where this kernel's vDSO has the functions."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from ratelimit_harness.harness.process_clock import vdso

SOURCE = Path(vdso.__file__).with_name("vdso_clock.S")


def own_vdso() -> bytes:
    where = vdso.mapped("self")
    assert where is not None
    with open("/proc/self/mem", "rb") as memory:
        memory.seek(where[0])
        return memory.read(where[1] - where[0])


def test_the_code_is_its_source_assembled(tmp_path: Path) -> None:
    """Assembled and linked at 0 by binutils (CI installs them with gcc); each entry and the
    page's address at the offset the code says."""
    tools = [shutil.which(tool) for tool in ("as", "ld", "objcopy", "nm")]
    if None in tools:
        if os.environ.get("HARNESS_REQUIRE_ALL_PATHS") == "1":
            pytest.fail("binutils (as, ld, objcopy, nm) are required")
        pytest.skip("no binutils to assemble vdso_clock.S")
    assembler, linker, objcopy, nm = (str(tool) for tool in tools)

    def run(*command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(command, check=True, capture_output=True, text=True)

    run(assembler, "--64", "-o", str(tmp_path / "clock.o"), str(SOURCE))
    run(linker, "-Ttext=0", "-e", "0", "-o", str(tmp_path / "clock"), str(tmp_path / "clock.o"))
    run(objcopy, "-O", "binary", "-j", ".text", str(tmp_path / "clock"), str(tmp_path / "code"))
    assert (tmp_path / "code").read_bytes() == vdso.CODE
    symbols = {
        name: int(value, 16)
        for value, _, name in (
            line.split() for line in run(nm, str(tmp_path / "clock")).stdout.splitlines()
        )
    }
    assert symbols["clock_gettime"] == 0
    assert (symbols["gettimeofday"], symbols["time"]) == (vdso.GETTIMEOFDAY, vdso.TIME)
    assert (symbols["system_call"], symbols["page"]) == (vdso.SYSTEM_CALL, vdso.PAGE)
    assert vdso.CODE[vdso.SYSTEM_CALL : vdso.SYSTEM_CALL + 3] == b"\x0f\x05\xcc"  # syscall; int3
    assert vdso.CODE[vdso.PAGE :] == bytes(8)  # no page until the tracer maps one


def test_this_kernels_vdso_has_room_for_the_code_and_the_jumps_land_on_it() -> None:
    layout = vdso.layout(own_vdso())
    assert layout.clock_gettime_size >= len(vdso.CODE)
    assert len(layout.slots) >= 4
    # the slots (and a clock file's name written across them) end inside gettimeofday's old
    # body, short of time's entry, which becomes a jump
    assert layout.gettimeofday < layout.slots.start
    assert layout.slots.stop <= layout.gettimeofday + layout.gettimeofday_size <= layout.time
    writes = dict(layout.writes())
    assert writes[layout.clock_gettime] == vdso.CODE
    for entry, target in ((layout.gettimeofday, vdso.GETTIMEOFDAY), (layout.time, vdso.TIME)):
        jump = writes[entry]
        assert jump[0] == 0xE9  # jmp rel32
        assert entry + 5 + struct.unpack("<i", jump[1:])[0] == layout.clock_gettime + target


def test_what_is_not_an_x86_64_vdso_is_refused() -> None:
    image = bytearray(own_vdso())
    image[18:20] = struct.pack("<H", 183)  # EM_AARCH64
    with pytest.raises(vdso.Unpatchable, match="only x86-64 programs are covered"):
        vdso.layout(bytes(image))
