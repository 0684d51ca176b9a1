"""The preload library the server on virtual time needs beside libfaketime: ``hide_cpuinfo.c``
(why: its own text), built here with the C compiler (``$CC``, else ``cc``) into
``hide_cpuinfo.so`` beside it, when that is missing or older than its source. Where the
source's folder cannot be written (a system-wide install), it is built into the user's cache,
``~/.cache/ratelimit-harness/``, instead.

``python -m ratelimit_harness.harness.provision.cpuinfo_shim`` builds it ahead of time (``make
venv`` does): where it cannot be built it says why on stderr and exits 1, and the explorer's server
keeps real time instead (``provision.provision_explorer``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

from ratelimit_harness.cache import user_cache
from ratelimit_harness.harness.provision.base import Unavailable

SOURCE = Path(__file__).with_name("hide_cpuinfo.c")
BUILT = SOURCE.with_suffix(".so")
FLAGS = ["-shared", "-fPIC", "-O2", "-Wall", "-Wextra", "-Werror"]


def library() -> Path:
    """The built library, built first if it is missing or older than its source."""
    built = target()
    if not built.exists() or built.stat().st_mtime < SOURCE.stat().st_mtime:
        built.parent.mkdir(parents=True, exist_ok=True)
        build(SOURCE, built, os.environ.get("CC") or "cc")
    return built


def target() -> Path:
    """Where the library is built: beside its source where that folder can be written (a
    checkout, a virtual environment), else in the user's cache."""
    return BUILT if os.access(BUILT.parent, os.W_OK) else user_cache() / BUILT.name


def build(source: Path, target: Path, compiler: str) -> None:
    """``source`` compiled to ``target`` by ``compiler``, or Unavailable saying why. Built
    under a name of its own and renamed over ``target``, so processes building it at once
    never load half a file."""
    found = shutil.which(compiler)
    if found is None:
        raise Unavailable(
            f"no C compiler ({compiler}) to build {source.name}, which the server on virtual "
            "time needs for a TIME to the microsecond (apt-get install gcc)"
        )
    partial = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}")
    command = [found, *FLAGS, "-o", str(partial), str(source), "-ldl"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
        if done.returncode != 0:
            said = (done.stderr.strip().splitlines() or ["no message"])[-1]
            raise Unavailable(f"{compiler} could not build {source.name}: {said}")
        os.replace(partial, target)
    except (OSError, subprocess.SubprocessError) as why:
        raise Unavailable(f"could not build {target}: {why}") from None
    finally:
        partial.unlink(missing_ok=True)


def main() -> int:
    try:
        print(library())
    except Unavailable as why:
        print(f"note: {why}; the explorer's server will keep real time", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
