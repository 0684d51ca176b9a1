"""ratelimit-harness check: the verdict, its JSON, and exit codes 0, 1 and 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ratelimit_harness.harness.history import Operation, Outcome
from ratelimit_harness.harness.history.jsonl import write_history
from ratelimit_harness.harness.history.snapshot import write_snapshot
from tests.harness.test_cli import harness

POLICY = "fixed-window:limit=2,window=10"
GOOD_LINE = '{"process": "p", "key": "k", "invoke": 1.0, "complete": 2.0, "outcome": "allowed"}\n'


def history(path: Path, *instants: float) -> Path:
    ops = [
        Operation(f"app-{i}", "user:1", t, t + 0.01, Outcome.ALLOWED)
        for i, t in enumerate(instants)
    ]
    write_history(path, ops)
    return path


def test_a_valid_history_exits_0(tmp_path: Path) -> None:
    result = harness("check", str(history(tmp_path / "h.jsonl", 1, 2, 11)), "--policy", POLICY)
    assert result.returncode == 0, result.stderr
    assert "VALID" in result.stdout


def test_a_composite_policy_judges_weighted_requests_in_units(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    path.write_text(
        '{"process": "p", "key": "k", "invoke": 1.0, "complete": 1.0, "outcome": "allowed", '
        '"cost": 3}\n'
        '{"process": "p", "key": "k", "invoke": 2.0, "complete": 2.0, "outcome": "rejected", '
        '"cost": 2}\n'
    )
    snapshot = tmp_path / "keys.jsonl"
    write_snapshot(snapshot, {"ratelimit:{k}": 7200.0})
    policy = "fixed-window:limit=5,window=10 + fixed-window:limit=50,window=600"
    result = harness("check", str(path), "--policy", policy, "--keys", str(snapshot))
    assert result.returncode == 1, result.stderr
    assert f"against {policy}" in result.stdout
    assert "wrongful-rejection" in result.stdout  # 2 more fit in both: 3 of 5, 3 of 50
    assert "excess-ttl" in result.stdout  # 7,200 s is over 10 x 600 s


def test_violations_exit_1_and_the_json_names_them(tmp_path: Path) -> None:
    out = tmp_path / "verdict.json"
    snapshot = tmp_path / "keys.jsonl"
    write_snapshot(snapshot, {"ratelimit:{user:1}:0": -1.0})
    args = ["--policy", POLICY, "--keys", str(snapshot), "--json", str(out)]
    result = harness("check", str(history(tmp_path / "h.jsonl", 1, 2, 3)), *args)
    assert result.returncode == 1
    assert "over-admission" in result.stdout
    verdict = json.loads(out.read_text())
    assert verdict["valid"] is False
    counts = {v["kind"]: v["count"] for v in verdict["violations"]}
    assert counts == {"over-admission": 1, "immortal-key": 1}
    witness = verdict["violations"][0]["witnesses"][0]
    assert witness["span"] == [0, 10]
    assert witness["processes"] == ["app-0", "app-1", "app-2"]


@pytest.mark.parametrize(
    ("content", "policy", "reason"),
    [
        (
            GOOD_LINE + "{oops\n",
            POLICY,
            "h.jsonl:2: invalid JSON",
        ),
        ("", "fixed-windows:limit=2,window=1", "unknown policy kind 'fixed-windows'"),
    ],
)
def test_bad_input_exits_2_with_one_line(
    tmp_path: Path, content: str, policy: str, reason: str
) -> None:
    path = tmp_path / "h.jsonl"
    path.write_text(content)
    result = harness("check", str(path), "--policy", policy)
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: ")
    assert reason in line


def test_a_missing_file_exits_2(tmp_path: Path) -> None:
    result = harness("check", str(tmp_path / "absent.jsonl"), "--policy", POLICY)
    assert result.returncode == 2
    assert "absent.jsonl" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_history_larger_than_a_part_is_judged_in_parts_with_the_same_verdict(
    tmp_path: Path,
) -> None:
    """1.5 MB of requests by 50 identities, 4 a window each where 2 fit: judged whole, and in
    parts of 1 MB by two workers, the same JSON; the listing counts what it does not list."""
    ops = [
        Operation(f"app-{n % 4}", f"user:{n % 50}", n / 20, n / 20 + 0.002, Outcome.ALLOWED)
        for n in range(14_000)
    ]
    path = tmp_path / "h.jsonl"
    write_history(path, ops)
    assert path.stat().st_size > 1 << 20
    verdicts = []
    for how in (["--part-mb", "64"], ["--part-mb", "1", "--workers", "2"]):
        out = tmp_path / f"verdict-{len(how)}.json"
        result = harness("check", str(path), "--policy", POLICY, "--json", str(out), *how)
        assert result.returncode == 1, result.stderr
        verdicts.append(json.loads(out.read_text()))
    assert "judging 2 parts: done" in result.stderr
    assert verdicts[0] == verdicts[1]
    over = verdicts[1]["violations"][0]
    assert over["count"] > 6_900  # about 2 too many in each of 3,500 windows
    assert len(over["witnesses"]) == 20
    listed = sum(witness["excess"] for witness in over["witnesses"][:3])
    assert f"... and {over['count'] - listed:,} more" in result.stdout


def test_an_identity_larger_than_a_part_is_streamed_or_said_to_be_held_whole(
    tmp_path: Path,
) -> None:
    """3.6 MB of one identity's requests, in parts of 1 MB: in order of invoke it is judged
    as a stream, silently; out of order, whole, and stderr says so and why."""
    ops = [
        Operation(f"app-{n % 4}", "user:1", n / 20, n / 20 + 0.002, Outcome.ALLOWED)
        for n in range(20_000)
    ]
    for name, history_ops in (("in-order", ops), ("out-of-order", ops[1:] + ops[:1])):
        path = tmp_path / f"{name}.jsonl"
        write_history(path, history_ops)
        result = harness("check", str(path), "--policy", POLICY, "--part-mb", "1")
        assert result.returncode == 1, result.stderr
        held = "user:1 is larger than a part (--part-mb): judged whole, in memory, because "
        if name == "in-order":
            assert held not in result.stderr
        else:
            assert held + "its operations are not in order of invoke" in result.stderr
