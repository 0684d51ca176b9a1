"""The command line by the conventions of pytest, pip and Locust: the name it was started by,
``--version``, each command's help (a summary, an example, its exit codes), defaults written
one way, a missing file named as missing, and exit code 3 for an environment that failed."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import pytest
import redis

from ratelimit_harness import __version__
from ratelimit_harness.harness.cli import exit_code, parser
from ratelimit_harness.harness.errors import BadArgument, LimiterError
from ratelimit_harness.harness.explorer.wire.proxy import ProxyError, ProxyTimeout, StepLost
from ratelimit_harness.harness.load.faults.proxy import FaultProxyError, FaultProxyFailed
from ratelimit_harness.harness.provision import Unavailable
from ratelimit_harness.harness.usage import COMMANDS, TOP_CODES
from ratelimit_harness.limiters import PolicyError
from tests.harness.support import ROOT
from tests.harness.support import run_command as run
from tests.harness.test_cli import harness

SCRIPT = Path(sys.executable).with_name("ratelimit-harness")


def subcommands() -> dict[str, argparse.ArgumentParser]:
    [commands] = [a for a in parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(commands.choices)


def test_every_command_has_its_usage() -> None:
    assert set(subcommands()) == set(COMMANDS)


def test_the_name_is_the_one_it_was_started_by() -> None:
    by_module = harness("--help")
    assert by_module.stdout.startswith("usage: python -m ratelimit_harness "), by_module.stdout
    by_script = run(SCRIPT, "race", "--help")
    assert by_script.stdout.startswith("usage: ratelimit-harness race "), by_script.stdout
    assert "\n  ratelimit-harness race --limiter " in by_script.stdout


def test_version() -> None:
    shown = run(SCRIPT, "--version")
    assert shown.returncode == 0
    assert shown.stdout == f"ratelimit-harness {__version__}\n"
    assert re.fullmatch(r"\d+\.\d+\.\d+", __version__)  # installed: not "0+unknown"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_commands_help_has_a_summary_an_example_and_exit_codes(name: str) -> None:
    shown = harness(name, "--help")
    assert shown.returncode == 0, shown.stderr
    usage = COMMANDS[name]
    text = " ".join(shown.stdout.split())
    assert usage.summary in text
    assert f"example: python -m ratelimit_harness {usage.example}" in text
    codes = re.findall(r"^  (\d+) ", shown.stdout.split("exit codes:\n")[1], re.M)
    assert codes == ["0", *(["1"] if usage.found else []), "2", "3", "130"]
    assert "the words it prints: docs/concepts.md" in text


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_defaults_are_written_one_way_and_say_the_default(name: str) -> None:
    for action in subcommands()[name]._actions:
        words = action.help or ""
        if action.help == argparse.SUPPRESS or not words:
            continue
        assert not re.search(r"\((?!default: )[^)]*\bdefault\b", words), words
        assert not re.search(r"\(default \w", words), words
        default = action.default
        if default in (None, False, argparse.SUPPRESS) or isinstance(default, bool):
            continue
        shown = f"{default:g}" if isinstance(default, float) else str(default)
        assert words.endswith(f"(default: {shown})"), f"{action.dest}: {words}"


def test_a_missing_file_is_named_as_missing(tmp_path: Path) -> None:
    missing = tmp_path / "nothing-here"
    for args in (["check", str(missing)], ["replay", str(missing)], ["report", str(missing)]):
        result = harness(*args)
        assert result.returncode == 2, result
        [line] = result.stderr.splitlines()
        assert line.startswith(f"error: no such file or directory: {missing} ("), line


def test_load_points_exec_to_service() -> None:
    result = harness("load", "--exec", "node server.js", "--duration", "1")
    assert result.returncode == 2
    assert "--service COMMAND" in result.stderr


def test_a_redis_that_does_not_answer_is_the_environment_exit_3() -> None:
    result = harness(
        "probe", "--limiter", "fixed-window-lua", "--redis-url", "redis://127.0.0.1:1/0"
    )
    assert result.returncode == 3, result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith("error: Redis not reachable at redis://127.0.0.1:1/0")


def test_docker_refused_is_the_environment_exit_3() -> None:
    result = harness(
        "probe",
        "--limiter",
        "fixed-window-lua",
        "--redis",
        "container",
        DOCKER_HOST="unix:///nonexistent/docker.sock",
    )
    assert result.returncode == 3, result.stderr
    assert "Docker engine not reachable" in result.stderr


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (Unavailable("no Redis"), 3),
        (redis.ConnectionError("lost"), 3),
        (redis.TimeoutError("slow"), 3),
        (ProxyTimeout("Redis did not answer"), 3),
        (StepLost("its connection closed"), 3),
        (FaultProxyFailed("the fault proxy has exited"), 3),
        (redis.ResponseError("ERR unknown command"), 2),
        (FaultProxyError("loopback only"), 2),
        (ProxyError("not a Redis URL"), 2),
        (BadArgument("--jobs"), 2),
        (PolicyError("limit"), 2),
        (LimiterError("raised"), 2),
        (ValueError("a bug"), None),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, Exception) else str(value),
)
def test_exit_codes_tell_bad_input_from_a_failed_environment(
    error: Exception, code: int | None
) -> None:
    assert exit_code(error) == code


def test_the_readmes_exit_codes_are_the_codes() -> None:
    text = (ROOT / "README.md").read_text().split("## Exit codes")[1].split("\n## ")[0]
    rows = re.findall(r"^\| (\d+) \| (.+) \|$", text, re.M)
    assert [(int(code), meaning) for code, meaning in rows] == list(TOP_CODES)
