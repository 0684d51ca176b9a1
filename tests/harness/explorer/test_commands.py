"""ratelimit-harness race and replay: exit codes, saved traces."""

import json
from pathlib import Path

import pytest

from ratelimit_harness.harness.history.races import RaceSummary
from tests.harness.support import SEARCH_TIMEOUT
from tests.harness.test_cli import harness


def test_race_finds_saves_and_replay_reproduces(tmp_path: Path) -> None:
    trace, summary = tmp_path / "trace.json", tmp_path / "race.json"
    found = harness(
        "race",
        "--limiter",
        "fixed-window-incr-expire",
        "--seed",
        "1",
        "--redis",
        "embedded",
        "--trace",
        str(trace),
        "--json",
        str(summary),
        timeout=SEARCH_TIMEOUT,
    )
    assert found.returncode == 1, found.stderr
    # INCR sent, then the crash before EXPIRE: a cheap schedule of the bounded stage
    assert "immortal-key, found by the bounded stage" in found.stdout
    assert "shrunk to 2 actions" in found.stdout
    said = json.loads(summary.read_text())
    assert RaceSummary.from_json(said).to_json() == said  # the record of what --json writes
    # every kind it shows, one search each, each with the faults it needs
    assert said["found"] == ["immortal-key", "over-admission", "wrongful-rejection"]
    assert said["found_by"] == "bounded"
    needs = {tuple(flaw["kinds"]): flaw["faults"] for flaw in said["flaws"]}
    assert needs == {
        ("immortal-key",): ["crash"],
        ("over-admission",): ["skew"],  # its window key comes from the app server's clock
        ("wrongful-rejection",): ["skew"],
    }
    assert said["flaws"][0]["trace"] == str(trace)
    assert all(Path(flaw["trace"]).exists() for flaw in said["flaws"])
    assert "immortal-key: needs crash" in found.stdout
    replayed = harness("replay", str(trace), "--redis", "embedded")
    assert replayed.returncode == 1, replayed.stderr
    assert "reproduced: immortal-key" in replayed.stdout


def test_nemesis_chooses_the_faults_and_exit_1_is_only_for_a_flaw_under_them(
    tmp_path: Path,
) -> None:
    args = ("race", "--limiter", "fixed-window-incr-expire", "--seed", "1", "--redis", "embedded",
            "--max-examples", "60", "--trace", str(tmp_path / "trace.json"))  # fmt: skip
    clean = harness(*args, "--nemesis", "none")
    assert clean.returncode == 0, clean.stdout + clean.stderr  # every flaw of it needs a fault
    assert "faults allowed: none" in clean.stdout
    crash_only = harness(*args, "--nemesis", "crash", "--json", str(tmp_path / "race.json"))
    assert crash_only.returncode == 1
    assert json.loads((tmp_path / "race.json").read_text())["found"] == ["immortal-key"]
    for bad in (["--nemesis", "crash,partition"], ["--max-skew", "-1"]):
        refused = harness(*args, *bad)
        assert refused.returncode == 2
        assert refused.stderr.strip().splitlines()[-1].startswith("error: ")
        assert "Traceback" not in refused.stderr


@pytest.mark.slow
def test_a_find_of_the_search_is_shrunk(tmp_path: Path) -> None:
    found = harness(
        "race", "--limiter", "token-bucket-client-clock", "--seed", "1", "--redis", "embedded",
        "--trace", str(tmp_path / "trace.json"), timeout=SEARCH_TIMEOUT,
    )  # fmt: skip
    assert found.returncode == 1, found.stderr
    # its clock read before a stall: the bounded stage; its clock skewed: only the search
    assert "over-admission, found by the bounded stage" in found.stdout
    assert "wrongful-rejection, found by Hypothesis' search" in found.stdout
    assert "needs skew 0.001 s; shrunk to " in found.stdout


def test_race_on_a_correct_limiter_exits_0() -> None:
    clean = harness("race", "--limiter", "gcra-lua", "--max-examples", "30", "--redis", "embedded")
    assert clean.returncode == 0, clean.stderr
    # the bounded stage judges 30 schedules (the budget), then 30 are drawn
    assert "no violation in 60 schedules; explored " in clean.stdout
    assert "; then 30 random schedules (seed " in clean.stdout


def test_bad_input_exits_2(tmp_path: Path) -> None:
    for args in (["race", "--limiter", "nope"], ["replay", str(tmp_path / "absent.json")]):
        result = harness(*args, "--redis", "embedded")
        assert result.returncode == 2
        assert result.stderr.startswith("error: ")
        assert "Traceback" not in result.stderr
