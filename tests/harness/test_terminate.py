"""SIGTERM ends a command even when the exit it raises lands in a finalizer and is swallowed."""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

CHILD = textwrap.dedent(
    """
    import os, signal, sys, weakref
    from ratelimit_harness.harness.terminate import exit_on_sigterm, pause

    class Resource:
        pass

    exit_on_sigterm()
    held = Resource()
    # the signal comes while a finalizer runs: the SystemExit raised there is only printed
    weakref.finalize(held, os.kill, os.getpid(), signal.SIGTERM)
    del held
    print("still running", flush=True)
    pause(%s)
    print("paused to the end", flush=True)
    """
)


def _run(program: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``program`` run by a Python of its own, in the checkout."""
    return subprocess.run(
        [sys.executable, "-c", program],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_a_pause_after_a_swallowed_sigterm_exits_at_once() -> None:
    done = _run(CHILD % 30)
    assert "Exception ignored" in done.stderr  # the exit was swallowed where it was raised
    assert done.stdout == "still running\n"  # and the process went on, to the pause
    assert done.returncode == 143  # which ended it at once, not 30 s later


def test_a_pause_without_a_signal_sleeps_its_time() -> None:
    child = CHILD.replace("weakref.finalize(held, os.kill, os.getpid(), signal.SIGTERM)", "")
    done = _run(child % 0.05)
    assert (done.returncode, done.stdout) == (0, "still running\npaused to the end\n")


SIGNAL_AT_A_CALL = textwrap.dedent(
    """
    import os, signal, sys
    from ratelimit_harness.harness.terminate import exit_on_sigterm, pause

    calls = 0

    def signal_at_call(frame, event, arg):
        global calls
        if event in ("call", "c_call"):
            calls += 1
            if calls == %d:
                sys.setprofile(None)
                os.kill(os.getpid(), signal.SIGTERM)  # handled where pause is, at this call

    exit_on_sigterm()
    sys.setprofile(signal_at_call)
    pause(30)
    """
)


@pytest.mark.parametrize("call", range(1, 13))
def test_a_sigterm_at_any_call_inside_a_pause_exits_at_once(call: int) -> None:
    # a handler that took a lock the pause held would wait for itself, and the process hang
    done = _run(SIGNAL_AT_A_CALL % call, timeout=20)
    assert done.returncode == 143, done.stderr
