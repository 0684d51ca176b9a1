"""The pytest plugin from a fresh virtual environment, in a directory of its own: a user's
limiter module and the README's test file, run by pytest there.

The environment is new (no pip, nothing installed) and gets the project installed from a copy
of its sources, not editable, so the plugin is found through the installed entry point. Its
dependencies are this environment's site-packages on its path (a ``.pth`` line, which does not
run the ``.pth`` files found there, so this checkout's editable install stays out): installing
them again from an index would take minutes and prove pip, not the plugin."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
LIMITERS = '''\
import time

SCRIPT = """
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('EXPIRE', KEYS[1], ARGV[2]) end
return n <= tonumber(ARGV[1]) and 1 or 0
"""


def factory(client, policy):
    """INCR and EXPIRE in one script, the window from this instance's clock: clean where the
    instances' clocks agree and none stalls between reading its clock and sending the script
    (raced with nemesis="crash": no skew, no stall)."""
    script = client.register_script(SCRIPT)

    def check(identity):
        key = f"mine:{{{identity}}}:{int(time.time() // policy.window)}"
        return bool(script(keys=[key], args=[policy.limit, int(policy.window) * 2]))

    return check


def get_then_set(client, policy):
    def check(identity):
        count = int(client.get(f"mine:{identity}") or 0)
        if count >= policy.limit:
            return False
        client.set(f"mine:{identity}", count + 1, ex=int(policy.window))
        return True

    return check
'''
USER_TESTS = """\
def test_my_limiter(race):
    result = race("mymod:factory", "fixed-window:limit=1,window=10", nemesis="crash")
    assert result.clean, result


def test_the_wrong_one(race):
    result = race("mymod:get_then_set", "fixed-window:limit=1,window=10")
    assert result.clean, result
"""


def _run(*command: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False
    )


def test_a_users_suite_races_their_limiter_from_a_fresh_environment(tmp_path: Path) -> None:
    started = time.perf_counter()
    venv, source, user = tmp_path / "venv", tmp_path / "source", tmp_path / "user"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    python = venv / "bin" / "python"
    purelib = _run(
        python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))", cwd=tmp_path
    )
    (Path(purelib.stdout.strip()) / "dependencies.pth").write_text(sysconfig.get_path("purelib"))
    skipped = shutil.ignore_patterns(
        ".*",
        "runs",
        "tests",
        "property_tests",
        "bench",
        "docs",
        "build",
        "*.egg-info",
        "__pycache__",
    )
    shutil.copytree(ROOT, source, ignore=skipped)
    install = _run(
        python,
        "-m",
        "pip",
        "install",
        "-q",
        "--no-deps",
        "--no-build-isolation",
        "--no-index",
        source,
        cwd=tmp_path,
    )
    assert install.returncode == 0, install.stderr
    where = _run(python, "-c", "import ratelimit_harness; print(ratelimit_harness.__file__)", cwd=tmp_path)
    assert where.stdout.startswith(str(venv)), where.stdout + where.stderr

    user.mkdir()
    (user / "mymod.py").write_text(LIMITERS)
    (user / "test_mine.py").write_text(USER_TESTS)
    fixtures = _run(python, "-m", "pytest", "--fixtures", "-p", "no:cacheprovider", cwd=user)
    assert "race -- " in fixtures.stdout, fixtures.stdout
    assert "redis_url [session scope]" in fixtures.stdout, fixtures.stdout
    # a fixed seed, for a run that is the same each time
    ran = _run(python, "-m", "pytest", "-p", "no:cacheprovider", "-rA", "--race-seed=1", cwd=user)
    out = ran.stdout
    assert ran.returncode == 1, out + ran.stderr
    assert "PASSED test_mine.py::test_my_limiter" in out, out
    assert "FAILED test_mine.py::test_the_wrong_one" in out, out
    assert "mymod:get_then_set with fixed-window:limit=1,window=10: over-admission" in out, out
    assert "Captured stdout call" in out, out  # the whole trace, which the assertion shortens
    assert "GET mine:user:1 -> nil" in out, out
    assert time.perf_counter() - started < 60
