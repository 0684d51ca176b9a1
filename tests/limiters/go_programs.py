"""The Go limiters of the tests (tests/limiters/programs/go/), built once per test session with the
machine's Go; a skip where Go is missing, a failure where HARNESS_REQUIRE_ALL_PATHS=1."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.harness.support import child_env

SOURCE = Path(__file__).parent / "programs" / "go"
PROGRAMS = (
    "get-set",
    "lua-window",
    "gcra-client-clock",
    "fixed-window-client-second",
    "clock-reader",
)
BUILD_TIMEOUT = 600.0  # seconds: the first build fetches go-redis and compiles it (about 1 min)


def build(into: Path) -> Path:
    """Each program of ``PROGRAMS`` built into ``into``; the folder."""
    go = shutil.which("go")
    if go is None:
        why = "no `go` on PATH"
        if os.environ.get("HARNESS_REQUIRE_ALL_PATHS") == "1":
            pytest.fail(f"the Go limiters are required but cannot be built: {why}")
        pytest.skip(f"the Go limiters cannot be built: {why}")
    subprocess.run(
        [go, "build", "-o", f"{into}{os.sep}", *(f"./{name}" for name in PROGRAMS)],
        cwd=SOURCE,
        env=child_env(),
        check=True,
        timeout=BUILD_TIMEOUT,
    )
    return into
