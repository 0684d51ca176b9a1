import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from ratelimit_harness.reports import junit, read, report


def _junit(source: Path, out: Path) -> ET.Element:
    """Only the JUnit file (``build`` writes it too; the plots are tested elsewhere)."""
    path = junit.write(out / "junit.xml", report(read(source)))
    return ET.parse(path).getroot()


def _failing(root: ET.Element) -> list[str]:
    return [c.get("name", "") for c in root.iter("testcase") if c.find("failure") is not None]


def _counts_agree(root: ET.Element) -> None:
    suites = [root, *root.iter("testsuite")]
    for suite in suites:
        cases = list(suite.iter("testcase"))
        assert suite.get("tests") == str(len(cases))
        failed = sum(c.find("failure") is not None for c in cases)
        assert suite.get("failures") == str(failed)


def _edit_table(run: Path, edit: Any) -> None:
    table = run / "race-test.json"
    data = json.loads(table.read_text())
    edit(data["rows"])
    table.write_text(json.dumps(data))


def test_race_test_passes_when_every_verdict_matches(race_test_dir: Path, tmp_path: Path) -> None:
    root = _junit(race_test_dir, tmp_path)
    _counts_agree(root)
    assert [c.get("name") for c in root.iter("testcase")] == [
        "naive-get-set[over-admission]",
        "naive-get-set[wrongful-rejection]",
        "fixed-window-lua[clean]",
        "boundary attack[over-admission]",
    ]
    assert _failing(root) == []


def test_a_flaw_not_found_fails_its_case_with_the_reason(
    race_test_dir: Path, tmp_path: Path
) -> None:
    def lose_a_flaw(rows: list[dict[str, Any]]) -> None:
        rows[0]["found_flaws"] = ["over-admission"]

    _edit_table(race_test_dir, lose_a_flaw)
    root = _junit(race_test_dir, tmp_path)
    _counts_agree(root)
    assert root.get("failures") == "1"
    assert _failing(root) == ["naive-get-set[wrongful-rejection]"]
    failure = next(root.iter("failure"))
    assert "did not find it" in failure.get("message", "")


def test_a_trace_that_did_not_replay_fails_its_case_with_the_trace(
    race_test_dir: Path, tmp_path: Path
) -> None:
    def no_replay(rows: list[dict[str, Any]]) -> None:
        rows[0]["replays_that_failed"] = ["naive-get-set-wrongful-rejection.json"]

    _edit_table(race_test_dir, no_replay)
    root = _junit(race_test_dir, tmp_path)
    _counts_agree(root)
    assert _failing(root) == ["naive-get-set[wrongful-rejection]"]
    failure = next(root.iter("failure"))
    assert "did not break the limiter again" in failure.get("message", "")
    assert "GET ratelimit:{user:1}:naive-get-set:limit=1,window=10 -> 1" in (failure.text or "")


def test_commands_unseen_fail_every_case_of_their_row(race_test_dir: Path, tmp_path: Path) -> None:
    def unseen(rows: list[dict[str, Any]]) -> None:
        rows[1]["unseen"] = 4

    _edit_table(race_test_dir, unseen)
    root = _junit(race_test_dir, tmp_path)
    assert _failing(root) == ["fixed-window-lua[clean]"]
    assert "4 commands reached Redis" in next(root.iter("failure")).get("message", "")


def test_a_correct_limiter_caught_fails_clean(race_test_dir: Path, tmp_path: Path) -> None:
    def dirty(rows: list[dict[str, Any]]) -> None:
        rows[1]["found_flaws"] = ["over-admission"]

    _edit_table(race_test_dir, dirty)
    root = _junit(race_test_dir, tmp_path)
    assert _failing(root) == ["fixed-window-lua[clean]"]


def test_a_race_fails_for_the_kind_it_found(race_file: Path, tmp_path: Path) -> None:
    root = _junit(race_file, tmp_path)
    _counts_agree(root)
    assert [c.get("name") for c in root.iter("testcase")] == [
        "token-bucket-client-clock[over-admission]",
        "token-bucket-client-clock[wrongful-rejection]",
        "token-bucket-client-clock[immortal-key]",
        "token-bucket-client-clock[collision]",
    ]
    assert _failing(root) == ["token-bucket-client-clock[wrongful-rejection]"]
    assert "clock jumps +0.001 s" in (next(root.iter("failure")).text or "")


def test_load_fails_for_each_violation_found(load_dir: Path, tmp_path: Path) -> None:
    root = _junit(load_dir, tmp_path)
    _counts_agree(root)
    assert [c.get("name") for c in root.iter("testcase")] == [
        "api[over-admission]",
        "api[wrongful-rejection]",
        "api[immortal-key]",
        "api[collision]",
        "api[header-lies]",
    ]
    assert _failing(root) == ["api[over-admission]"]
    text = next(root.iter("failure")).text or ""
    assert "11 admissions fall within" in text


def test_load_with_a_planted_violation_and_lie(load_dir: Path, tmp_path: Path) -> None:
    path = load_dir / "verdict.json"
    verdict = json.loads(path.read_text())
    rule = verdict["rules"][0]
    rule["server"]["violations"].append(
        {
            "kind": "immortal-key",
            "count": 1,
            "witnesses": [
                {
                    "key": "ratelimit:{attacker-1}:1796096290",
                    "span": [0.0, 0.0],
                    "detail": "planted: it never expires",
                    "operations": [],
                }
            ],
        }
    )
    rule["header_lies"] = {"fields-disagree": 3}
    rule["header_lie_examples"] = {"fields-disagree": "planted: X-RateLimit-Remaining 4, r=5"}
    path.write_text(json.dumps(verdict))
    root = _junit(load_dir, tmp_path)
    _counts_agree(root)
    assert root.get("failures") == "3"
    assert _failing(root) == ["api[over-admission]", "api[immortal-key]", "api[header-lies]"]
    texts = [f.text or "" for f in root.iter("failure")]
    assert "planted: it never expires" in texts[1]
    assert "planted: X-RateLimit-Remaining 4" in texts[2]


def test_a_kind_the_run_could_not_judge_is_a_skipped_case_with_why(
    load_dir: Path, tmp_path: Path
) -> None:
    path = load_dir / "verdict.json"
    verdict = json.loads(path.read_text())
    for side in ("server", "client"):
        judged = verdict["rules"][0][side]
        judged["checked"].remove("wrongful-rejection")
        judged["unjudged"] = {"wrongful-rejection": "planted: 3 of its keys were there before"}
    path.write_text(json.dumps(verdict))
    root = _junit(load_dir, tmp_path)
    _counts_agree(root)
    (skipped,) = [c for c in root.iter("testcase") if c.find("skipped") is not None]
    assert skipped.get("name") == "api[wrongful-rejection]"
    why = skipped.find("skipped")
    assert why is not None
    assert "planted: 3 of its keys" in why.get("message", "")
    assert root.get("skipped") == "1"
    assert _failing(root) == ["api[over-admission]"]
