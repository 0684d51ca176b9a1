"""Run directories: named once, never shared, and judged again from what they keep."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ratelimit_harness.harness.checkers import check
from ratelimit_harness.harness.cli import main
from ratelimit_harness.harness.history import Operation, Outcome
from ratelimit_harness.harness.rundir import MANIFEST, keep_judged, new_run_dir, rejudge
from ratelimit_harness.limiters import Policy

POLICY = Policy.parse("fixed-window:limit=1,window=10")


def _history() -> list[Operation]:
    return [
        Operation("app-0", "user:1", 1.0, 1.0, Outcome.ALLOWED),
        Operation("app-1", "user:1", 2.0, 2.0, Outcome.ALLOWED),  # the second in one window
    ]


def test_two_runs_in_one_second_get_directories_of_their_own(tmp_path: Path) -> None:
    first, second = new_run_dir("race", "a:b", root=tmp_path), new_run_dir("race", "a:b", tmp_path)
    assert first != second
    assert first.name.startswith("race-a.b-")
    assert second.name == f"{first.name}-2"
    assert json.loads((first / MANIFEST).read_text()) == {"kind": "race", "name": "a:b"}


@pytest.mark.parametrize(
    ("name", "word"),
    [
        ("mymod:factory", "mymod.factory"),
        ("exec:node ./limiters/js/fixed_window.js", "exec.node.limiters.js.fixed_window.js"),
        ("exec:" + "x" * 100, "exec." + "x" * 55),
    ],
)
def test_a_run_directory_is_named_in_one_word_of_its_runs_name(
    name: str, word: str, tmp_path: Path
) -> None:
    made = new_run_dir("race", name, root=tmp_path)
    assert made.parent == tmp_path
    assert made.name.startswith(f"race-{word}-")
    assert json.loads((made / MANIFEST).read_text()) == {"kind": "race", "name": name}


def test_a_kept_history_is_judged_again_with_the_verdict_it_recorded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = new_run_dir("race", root=tmp_path)
    history = _history()
    verdict = check(history, POLICY, {"k": -1.0})
    keep_judged(run_dir, "trace", policy=POLICY, history=history, ttls={"k": -1}, verdict=verdict)
    (again,) = rejudge(run_dir)
    assert again.same
    assert again.verdict.kinds == {"over-admission", "immortal-key"}
    assert main(["check", str(run_dir)]) == 1
    assert "(as recorded)" in capsys.readouterr().out


def test_a_verdict_that_changed_is_said_to_differ(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = new_run_dir("race", root=tmp_path)
    valid = check(_history()[:1], POLICY)  # recorded for one history, kept with another
    keep_judged(run_dir, "trace", policy=POLICY, history=_history(), ttls={}, verdict=valid)
    (again,) = rejudge(run_dir)
    assert not again.same
    assert main(["check", str(run_dir)]) == 1
    assert "DIFFERS" in capsys.readouterr().out


@pytest.mark.parametrize(("ttl", "same"), [(5.0, True), (500.0, False)])
def test_a_kind_the_run_did_not_judge_yet_differs_only_where_it_is_found(
    ttl: float, same: bool, tmp_path: Path
) -> None:
    run_dir = new_run_dir("race", root=tmp_path)
    history = _history()[:1]
    older = check(history, POLICY, {"k": ttl}, unjudged={"excess-ttl": "not yet"})
    keep_judged(run_dir, "trace", policy=POLICY, history=history, ttls={"k": ttl}, verdict=older)
    recorded = json.loads((run_dir / "trace.verdict.json").read_text())
    del recorded["unjudged"]  # as a harness that had no excess-ttl wrote it
    (run_dir / "trace.verdict.json").write_text(json.dumps(recorded))
    (again,) = rejudge(run_dir)
    assert "excess-ttl" in again.verdict.checked
    assert again.same is same  # a key kept 500 s under a 10 s window is found: it differs


def test_a_directory_without_a_manifest_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", str(tmp_path)]) == 2
    assert "not a run directory" in capsys.readouterr().err
