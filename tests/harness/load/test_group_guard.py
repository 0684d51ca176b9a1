"""The guard of a user's service: the children a service forks die with a harness killed
outright, a stop while the harness lives is left to the service, and the service's exit is the
guard's."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ratelimit_harness.harness.load.system.guard import guarded
from tests.harness.support import child_env, running_for, wait_for

pytestmark = pytest.mark.realtime  # on the wall clock: run one at a time


def run_guarded(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        guarded(command),
        capture_output=True,
        text=True,
        timeout=30,
        start_new_session=True,
        check=False,
        env=child_env(),
    )


def test_what_a_service_forked_dies_with_a_harness_killed_outright(tmp_path: Path) -> None:
    harness = textwrap.dedent(
        """
        import subprocess, sys, time
        from ratelimit_harness.harness.load.system.guard import guarded
        # sh forks two sleeps; only the guard knows they are the service's
        subprocess.Popen(guarded(["sh", "-c", "sleep 600 & sleep 600"]), start_new_session=True)
        time.sleep(600)
        """
    )
    process = subprocess.Popen(
        [sys.executable, "-c", harness], env=child_env(GUARD_TEST_MARK=str(tmp_path))
    )
    try:  # the harness, the guard, sh and its two sleeps
        assert wait_for(lambda: len(running_for(tmp_path)) == 5), running_for(tmp_path)
    finally:
        process.kill()  # SIGKILL: no clean-up of its own
        process.wait()
    assert wait_for(lambda: not running_for(tmp_path), timeout=10), running_for(tmp_path)


def test_a_stop_while_the_harness_lives_is_the_services_to_handle() -> None:
    command = ["sh", "-c", "trap 'exit 7' TERM; echo ready; sleep 600 & wait"]
    with subprocess.Popen(
        guarded(command), stdout=subprocess.PIPE, text=True, start_new_session=True
    ) as guard:
        try:
            assert guard.stdout is not None
            assert guard.stdout.readline() == "ready\n"
            os.killpg(guard.pid, signal.SIGTERM)  # as the harness stops an instance
            assert guard.wait(timeout=30) == 7  # the service's trap ran: not killed outright
        finally:
            if guard.poll() is None:
                os.killpg(guard.pid, signal.SIGKILL)


def test_the_guard_exits_as_the_service_did() -> None:
    assert run_guarded(["sh", "-c", "exit 3"]).returncode == 3
    assert run_guarded(["sh", "-c", "kill -TERM $$"]).returncode == 128 + signal.SIGTERM
    missing = run_guarded(["no-such-service-anywhere", "--port", "1"])
    assert missing.returncode == 127
    assert "cannot start 'no-such-service-anywhere'" in missing.stderr


def test_the_guard_never_kills_the_group_it_was_started_in(tmp_path: Path) -> None:
    harness = textwrap.dedent(
        """
        import subprocess, time
        from ratelimit_harness.harness.load.system.guard import guarded
        subprocess.Popen(["sleep", "600"])  # a bystander in the harness's own group
        subprocess.Popen(guarded(["sleep", "600"]))  # no session of its own asked for
        time.sleep(600)
        """
    )
    process = subprocess.Popen(
        [sys.executable, "-c", harness],
        env=child_env(GUARD_TEST_MARK=str(tmp_path)),
        start_new_session=True,
    )
    try:
        assert wait_for(lambda: len(running_for(tmp_path)) == 4), running_for(tmp_path)
        process.kill()
        process.wait()
        assert wait_for(lambda: len(running_for(tmp_path)) == 1, timeout=10)
        (bystander,) = running_for(tmp_path)
        assert os.getpgid(bystander) == process.pid  # the harness's group: untouched
    finally:
        os.killpg(process.pid, signal.SIGKILL)
