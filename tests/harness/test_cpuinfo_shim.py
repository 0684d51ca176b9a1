"""The preload the server on virtual time needs: built from its source, it hides
/proc/cpuinfo from fopen() and nothing else; where it cannot be built, the reason is said."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ratelimit_harness.harness.provision import Unavailable, cpuinfo_shim
from ratelimit_harness.harness.provision.cpuinfo_shim import SOURCE, build

# what fopen() gives a process, as a line per path: "opened" or the error's name
FOPEN = """
import ctypes, errno, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.fopen.restype = ctypes.c_void_p
for path in sys.argv[1:]:
    found = libc.fopen(path.encode(), b"r")
    print("opened" if found else errno.errorcode[ctypes.get_errno()])
"""


def _fopen(paths: list[str], preload: Path | None) -> list[str]:
    env = dict(os.environ, LD_PRELOAD=str(preload)) if preload else dict(os.environ)
    done = subprocess.run(
        [sys.executable, "-c", FOPEN, *paths], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.split()


def test_the_built_library_hides_cpuinfo_and_nothing_else(tmp_path: Path) -> None:
    built = tmp_path / "hide_cpuinfo.so"
    build(SOURCE, built, "cc")
    paths = ["/proc/cpuinfo", "/proc/version", str(tmp_path / "absent")]
    assert _fopen(paths, None) == ["opened", "opened", "ENOENT"]
    assert _fopen(paths, built) == ["ENOENT", "opened", "ENOENT"]


def test_no_compiler_is_said(tmp_path: Path) -> None:
    with pytest.raises(Unavailable, match=r"no C compiler \(no-such-cc\).*apt-get install gcc"):
        build(SOURCE, tmp_path / "hide_cpuinfo.so", "no-such-cc")
    assert list(tmp_path.iterdir()) == []


def test_a_failed_build_says_the_compiler_s_complaint(tmp_path: Path) -> None:
    broken = tmp_path / "broken.c"
    broken.write_text("this is not C\n")
    with pytest.raises(Unavailable, match=r"cc could not build broken\.c: .*error"):
        build(broken, tmp_path / "broken.so", "cc")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["broken.c"]


def test_a_folder_that_cannot_be_written_builds_into_the_cache(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cpuinfo_shim.target() == cpuinfo_shim.BUILT  # a checkout can be written
    access, installed = os.access, cpuinfo_shim.BUILT.parent
    # a system-wide install: the source's folder cannot be written (the rest can)
    monkeypatch.setattr(
        os, "access", lambda path, mode: Path(path) != installed and access(path, mode)
    )
    built = cpuinfo_shim.library()
    assert built == tmp_path / "ratelimit-harness" / "hide_cpuinfo.so"
    assert _fopen(["/proc/cpuinfo"], built) == ["ENOENT"]
