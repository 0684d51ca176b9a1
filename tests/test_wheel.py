"""The wheel, as a user gets it: built from the sdist, installed into a fresh virtual
environment outside the checkout, and run from a user's project that has packages of its own
called ``limiters`` and ``reports``. Each test runs one entry point there: the pytest plugin,
``race``, ``race-test`` (its JavaScript rows where Node is), a short headless ``load``.

The environment is new (no pip, nothing installed) and gets only the wheel. Its dependencies
are this environment's site-packages on its path (a ``.pth`` line, which does not run the
``.pth`` files found there, so this checkout's editable install stays out): installing them
again from an index would take minutes and prove pip, not the wheel."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from ratelimit_harness.limiters.js_catalogue import JS_CATALOGUE

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 300  # seconds for any one command here (race-test installs ioredis with npm)

# The user's own packages, named as ours once were: theirs must win in their project.
USER_LIMITERS = '''\
"""The user's own limiters package."""

SCRIPT = """
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('EXPIRE', KEYS[1], ARGV[2]) end
return n <= tonumber(ARGV[1]) and 1 or 0
"""
'''
USER_REPORTS = '"""The user\'s own reports package."""\nTITLE = "weekly"\n'
MYMOD = '''\
import time

from limiters import SCRIPT  # the user's package, not the harness's


def factory(client, policy):
    """INCR and EXPIRE in one script, the window from this instance's clock: clean where the
    instances' clocks agree and none stalls between reading its clock and sending the script
    (raced with nemesis crash: no skew, no stall)."""
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
import reports


def test_my_reports_package_is_mine():
    assert reports.TITLE == "weekly"


def test_my_limiter(race):
    result = race("mymod:factory", "fixed-window:limit=1,window=10", nemesis="crash")
    assert result.clean, result


def test_the_wrong_one(race):
    result = race("mymod:get_then_set", "fixed-window:limit=1,window=10")
    assert result.clean, result
"""


def _clean_env(**extra: str) -> dict[str, str]:
    """This environment without what would point a child at this checkout, or at a Redis."""
    drop = ("PYTHONPATH", "VIRTUAL_ENV", "REDIS_URL", "HARNESS_REDIS")
    return {k: v for k, v in os.environ.items() if k not in drop} | extra


@dataclass(frozen=True)
class Installed:
    wheel: Path
    venv: Path
    project: Path  # the user's project, where every command runs
    cache: Path  # the user's cache directory (XDG_CACHE_HOME)

    def run(self, *command: str | Path) -> subprocess.CompletedProcess[str]:
        path = f"{self.venv / 'bin'}:{os.environ['PATH']}"
        env = _clean_env(XDG_CACHE_HOME=str(self.cache), PATH=path)
        return subprocess.run(
            command,
            cwd=self.project,
            env=env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )

    def harness(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.run(self.venv / "bin" / "ratelimit-harness", *args)


def _done(*command: str | Path, cwd: Path | None = None) -> str:
    """What ``command`` printed; it must succeed."""
    ran = subprocess.run(
        command,
        cwd=cwd,
        env=_clean_env(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    return ran.stdout


def _build(source: Path, out: Path) -> Path:
    """The sdist of ``source``, built, unpacked and built into a wheel in ``out``."""
    python = sys.executable
    sdist = f"from setuptools import build_meta as b; print(b.build_sdist({str(out)!r}))"
    name = _done(python, "-c", sdist, cwd=source).split()[-1]
    with tarfile.open(out / name) as archive:
        # the "data" filter came in Python 3.11.4; Debian 12's python3 is 3.11.2, and the sdist
        # is the one just built here
        if hasattr(tarfile, "data_filter"):
            archive.extractall(out / "sdist", filter="data")
        else:
            archive.extractall(out / "sdist")
    [unpacked] = (out / "sdist").iterdir()
    _done(
        python, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", out, unpacked
    )
    [built] = out.glob("*.whl")
    return built


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    top = tmp_path_factory.mktemp("wheel")
    source, dist, venv, project = top / "source", top / "dist", top / "venv", top / "project"
    skipped = shutil.ignore_patterns(
        ".git", ".venv", ".corpus", "runs", "node_modules", "build", "*.egg-info", "__pycache__"
    )
    shutil.copytree(ROOT, source, ignore=skipped, symlinks=True)
    dist.mkdir()
    wheel = _build(source, dist)

    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    python = venv / "bin" / "python"
    purelib = _done(python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))")
    (Path(purelib.strip()) / "dependencies.pth").write_text(sysconfig.get_path("purelib"))
    _done(python, "-m", "pip", "install", "-q", "--no-deps", "--no-index", wheel)

    for package, text in (("limiters", USER_LIMITERS), ("reports", USER_REPORTS)):
        (project / package).mkdir(parents=True)
        (project / package / "__init__.py").write_text(text)
    (project / "mymod.py").write_text(MYMOD)
    (project / "test_mine.py").write_text(USER_TESTS)
    return Installed(wheel, venv, project, top / "cache")


def test_the_wheel_holds_one_import_name_and_what_a_user_needs(installed: Installed) -> None:
    names = zipfile.ZipFile(installed.wheel).namelist()
    tops = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert tops == {"ratelimit_harness"}
    package = "ratelimit_harness/"
    assert f"{package}limiters/token_bucket.lua" in names
    assert f"{package}limiters/js/package-lock.json" in names
    assert f"{package}limiters/js/lib/runner.js" in names
    assert f"{package}limiters/js/service/server.js" in names
    assert {f"{package}limiters/js/{name}.js" for name in JS_CATALOGUE} <= set(names)
    assert f"{package}harness/explorer/search/explore.py" in names
    assert f"{package}harness/process_clock/trampoline.py" in names
    assert f"{package}harness/process_clock/vdso_clock.S" in names
    assert f"{package}locustfiles/burst.py" in names
    assert not [name for name in names if "node_modules" in name]
    where = installed.run(
        installed.venv / "bin" / "python", "-c", "import ratelimit_harness as r; print(r.__file__)"
    )
    assert where.stdout.startswith(str(installed.venv)), where.stdout + where.stderr


def test_the_pytest_plugin_in_a_project_with_its_own_limiters(installed: Installed) -> None:
    python = installed.venv / "bin" / "python"
    fixtures = installed.run(python, "-m", "pytest", "--fixtures", "-p", "no:cacheprovider")
    assert "race -- " in fixtures.stdout, fixtures.stdout + fixtures.stderr
    # a fixed seed, for a run that is the same each time
    ran = installed.run(python, "-m", "pytest", "-p", "no:cacheprovider", "-rA", "--race-seed=1")
    out = ran.stdout
    assert ran.returncode == 1, out + ran.stderr
    assert "PASSED test_mine.py::test_my_reports_package_is_mine" in out, out
    assert "PASSED test_mine.py::test_my_limiter" in out, out
    assert "FAILED test_mine.py::test_the_wrong_one" in out, out
    assert "mymod:get_then_set with fixed-window:limit=1,window=10: over-admission" in out, out
    assert "Captured stdout call" in out, out  # the whole trace, which the assertion shortens
    assert "GET mine:user:1 -> nil" in out, out


def test_race_finds_the_users_module_in_their_project(installed: Installed) -> None:
    policy = ("--policy", "fixed-window:limit=1,window=10", "--seed", "1")
    clean = installed.harness("race", "--limiter", "mymod:factory", *policy, "--nemesis", "crash")
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "no violation" in clean.stdout
    caught = installed.harness("race", "--limiter", "mymod:get_then_set", *policy)
    assert caught.returncode == 1, caught.stdout + caught.stderr
    assert "over-admission" in caught.stdout


def test_race_test_runs_its_rows_and_the_javascript_ones_where_node_is(
    installed: Installed,
) -> None:
    rows = ["naive-get-set", "fixed-window-lua"]
    node = shutil.which("node") is not None and shutil.which("npm") is not None
    rows += ["naive-get-set.js"] if node else []
    ran = installed.harness("race-test", "--seed", "1", "--limiters", ",".join(rows))
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "all verdicts match the catalogue" in ran.stdout
    for row in rows:
        assert f"\n{row} " in ran.stdout, ran.stdout
    if node:  # ioredis went into the user's cache, not into the installed package
        assert "installing ioredis for the JavaScript limiters" in ran.stderr
        assert list(installed.cache.glob("ratelimit-harness/js-*/node_modules/ioredis"))


@pytest.mark.realtime
def test_a_short_headless_load(installed: Installed) -> None:
    ran = installed.harness(
        "load", "--limiter", "fixed-window-lua", "--duration", "3", "--instances", "2"
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "report:" in ran.stdout
