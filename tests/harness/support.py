"""Helpers for the harness tests: skipping a missing path, child processes, waiting with a bound."""

from __future__ import annotations

import os
import select
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import docker.errors
import pytest

from ratelimit_harness.harness.provision import RedisServer, Unavailable, provision
from ratelimit_harness.harness.provision.container import docker_client, image_name, require_image

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 30.0  # seconds: generous, but every wait in these tests ends
# a race that searches its whole budget, each kind of flaw in turn (15-35 s on 2 busy cores)
SEARCH_TIMEOUT = 180.0


def unavailable(how: str, why: Unavailable) -> NoReturn:
    """Skip, or fail where HARNESS_REQUIRE_ALL_PATHS=1, as tests/conftest.py does."""
    if os.environ.get("HARNESS_REQUIRE_ALL_PATHS") == "1":
        pytest.fail(f"{how} Redis required but unavailable: {why}")
    pytest.skip(f"{how} Redis unavailable: {why}")


def start(how: str) -> RedisServer:
    try:
        return provision(how)
    except Unavailable as why:
        unavailable(how, why)


def docker_or_skip() -> Any:
    """A Docker SDK client of an engine that has the Redis image, else skip (or fail)."""
    try:
        client = docker_client()
        require_image(client, image_name())
    except Unavailable as why:
        unavailable("container", why)
    return client


def child_env(**extra: str) -> dict[str, str]:
    """This environment, less what would make a child use some other Redis than asked."""
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "HARNESS_REDIS")}
    return {**env, **extra}


def run_command(
    *command: str | Path, timeout: float = TIMEOUT, **env: str
) -> subprocess.CompletedProcess[str]:
    """``command`` run to its end in the checkout, with ``child_env(**env)``; bounded."""
    return subprocess.run(
        command,
        cwd=ROOT,
        env=child_env(**env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def read_line(stream: Any, timeout: float = TIMEOUT) -> str:
    """The next line a child writes to ``stream``; fails after ``timeout`` seconds."""
    ready, _, _ = select.select([stream], [], [], timeout)
    assert ready, f"no output from the child in {timeout:.0f} s"
    return str(stream.readline())


def wait_for(condition: Callable[[], bool], timeout: float = TIMEOUT) -> bool:
    """Poll ``condition`` until it holds or ``timeout`` passes; whether it held."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def process_gone(pid: int) -> bool:
    """No process ``pid`` runs: it does not exist, or is a zombie waiting for init to reap it."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rpartition(")")[2].split()[0] == "Z"


def container_exists(client: Any, container_id: str) -> bool:
    try:
        client.containers.get(container_id)
    except docker.errors.NotFound:
        return False
    return True


def kill_quietly(process: subprocess.Popen[str]) -> None:
    """Make sure a child we started is gone, however the test ended."""
    if process.poll() is None:
        process.kill()
    process.wait(timeout=TIMEOUT)
    for stream in (process.stdout, process.stderr):
        if stream:
            stream.close()


def running_for(run_dir: Path) -> list[int]:
    """The processes still running for ``run_dir``: those with its path in their environment."""
    mark = str(run_dir).encode()
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if mark in (proc / "environ").read_bytes():
                found.append(int(proc.name))
        except OSError:  # gone, or not ours to read
            continue
    return found
