"""The docs' benchmark figures: the committed pages say what the committed results say, and the
renderer, on results made up here, puts each figure where it belongs and nothing else."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ratelimit_harness.reports.bench_blocks import (
    BLOCKS,
    decisions,
    explorer,
    load_speed,
    measured,
    race_speed,
)
from ratelimit_harness.reports.bench_docs import (
    ROOT,
    begin,
    blocks_in,
    end,
    main,
    pages,
    render,
    rendered,
    stale,
)

MACHINE = {
    "cores": 8,
    "load": 0.42,
    "python": "3.11.9",
    "servers": {"embedded": "Redis 7.2.5", "explorer": "Valkey 9.1.2", "default": "Redis 7.2.5"},
}


def entry(rows: list[dict[str, Any]], **provenance: Any) -> dict[str, Any]:
    made = {"date": "2031-05-06", "commit": "f00dfee", "dirty": False, "quick": False}
    return {
        **made,
        "arguments": [],
        "machine": MACHINE,
        "seconds": 12.0,
        "rows": rows,
        **provenance,
    }


def decision(mode: str, workers: int, what: str, rate: float, vs_raw: float) -> dict[str, Any]:
    nearest = None if what.startswith(("raw", "limits")) else "limits FixedWindow"
    return {
        "measure": f"decisions/s, {mode}",
        "workers": workers,
        "what": what,
        "value": rate,
        "unit": "/s",
        "note": "",
        "vs_raw": vs_raw,
        "vs_limits": None if nearest is None else vs_raw + 0.1,
        "nearest": nearest,
        "server_us": 4.25,
    }


def decisions_entry() -> dict[str, Any]:
    rows = []
    for mode, workers in (("one connection", 1), ("threads", 4)):
        rows += [
            decision(mode, workers, "raw EVALSHA", 40_000, 1.0),
            decision(mode, workers, "fixed-window-lua", 36_100, 0.904),
            decision(mode, workers, "gcra-lua", 35_700, 0.894 if workers == 1 else 0.95),
            decision(mode, workers, "limits FixedWindow", 36_000, 0.9),
        ]
    return entry(rows)


def test_the_committed_docs_show_the_committed_results() -> None:
    assert stale(ROOT) == {}, (
        "a figure block is stale: python -m ratelimit_harness.reports.bench_docs"
    )


def test_every_block_is_on_some_page_of_the_docs() -> None:
    shown = {name for page in pages(ROOT) for name in blocks_in(page.read_text())}
    assert shown == set(BLOCKS)


def test_decisions_render_the_ratios_as_shown_and_the_round_trip() -> None:
    text = decisions({"decisions": decisions_entry()})
    assert text.startswith(
        "*Measured on 2031-05-06 at commit `f00dfee` (8 cores, load average 0.4 before the run, "
        "Python 3.11.9, Redis 7.2.5 embedded): `bench/decisions.py`.*\n"
    )
    assert "| `fixed-window-lua` | 36,100 | 0.90 | 1.00 (limits FixedWindow) | 0.90 | 4.2 |" in text
    assert "| `limits FixedWindow` | 36,000 | 0.90 |  | 0.90 | 4.2 |" in text
    assert "| candidate | one connection: decisions/s | x raw |" in text
    assert "| 4 threads: x raw | server µs |" in text
    # 1e6 / 40,000 decisions/s; 0.9 of the rate leaves a ninth of the round trip
    assert "a round trip of 25.0 µs; 0.9 of its rate leaves 2.8 µs" in text
    # gcra's 0.894 shows as 0.89, below the goal, on one connection; 0.95 with threads
    assert "Of the 2 Lua limiters, at 0.9 of raw EVALSHA or more: 1 on one connection, " in text
    assert "2 with 4 threads; level with" in text


def test_the_opening_names_each_run_when_entries_come_from_several() -> None:
    benches = {
        "race_test_time": entry([], arguments=["--jobs", "1", "all"]),
        "schedule_rate": entry([], commit="beefcab", dirty=True, quick=True),
    }
    opening = measured(benches, ["race_test_time", "schedule_rate"], ["explorer"])
    about = "8 cores, load average 0.4 before the run, Python 3.11.9, Valkey 9.1.2 on virtual time"
    assert opening == (
        f"*Measured on 2031-05-06 at commit `f00dfee` ({about}): "
        "`bench/race_test_time.py --jobs 1 all`.* *Measured on 2031-05-06 at commit `beefcab` "
        f"with uncommitted changes ({about}): `bench/schedule_rate.py` (quick).*"
    )


def test_a_block_whose_benchmark_was_not_measured_says_how_to_measure_it() -> None:
    assert explorer({"race_test_time": entry([])}) == (
        "*Not measured yet: `make bench BENCH_ARGS='--only schedule_rate'`.*"
    )


def test_explorer_gives_the_speed_up_and_each_race_rate() -> None:
    wall = {"measure": "race-test wall time", "unit": "s", "note": "", "all_match": True}
    speed = {"measure": "explorer", "what": "schedules/s", "value": 80.0, "unit": "/s"}
    rate = {"measure": "explorer: schedules per second (race --seed 1)", "unit": "/s"}
    benches = {
        "race_test_time": entry(
            [
                {**wall, "what": "--jobs 1", "value": 60.0},
                {**wall, "what": "--jobs all (2)", "value": 40.0},
                {**speed, "note": "", "schedules": 4000, "seconds": 50.0},
            ]
        ),
        "schedule_rate": entry(
            [
                {
                    **rate,
                    "what": "naive-get-set",
                    "value": 70.2,
                    "rounds": 5,
                    "slowest": 61.0,
                    "fastest": 88.4,
                    "note": "",
                    "vs_other": None,
                }
            ]
        ),
    }
    text = explorer(benches)
    assert "took 60.0 s with `--jobs 1` and 40.0 s with `--jobs all (2)` (x1.50)" in text
    assert "every verdict matching" in text
    assert "80 schedules a second in its rows with `--jobs 1`" in text
    assert "(12 ms a schedule: 4,000 schedules in 50 s" in text
    assert "the median of 5 rounds (slowest-fastest): 70 on `naive-get-set` (61-88)." in text


def test_race_speed_counts_the_searches_over_their_goal() -> None:
    found = {"measure": "explorer: median seconds to find a flaw", "unit": "s", "note": ""}
    rows = [
        {
            **found,
            "limiter": "naive-get-set",
            "flaw": "over-admission",
            "stages": "sweep",
            "schedules": 3,
            "value": 0.04,
            "with_shrinking": 0.5,
            "actions": [4, 4],
            "missed": 0,
            "ratio": 0.06,
        },
        {
            **found,
            "limiter": "token-bucket-client-clock",
            "flaw": "over-admission",
            "stages": "search",
            "schedules": 300,
            "value": 15.0,
            "with_shrinking": 25.0,
            "actions": [2, 8],
            "missed": 1,
            "ratio": 1.25,
        },
    ]
    text = race_speed({"race_speed": entry(rows)})
    assert "| naive-get-set | over-admission | sweep | 3 | 0.04 | 0.50 | 4 | 0 | 0.06 |" in text
    assert "| search | 300 | 15.00 | 25.00 | 2-8 | 1 | 1.25 |" in text
    assert text.endswith(
        "1 of the 2 searches within their goal; the slowest, token-bucket-client-clock's "
        "over-admission, at 1.25 of it; 1 missed in all."
    )


def test_load_speed_gives_the_swarm_against_locust_alone_and_the_live_view() -> None:
    def row(measure: str, what: str, value: float, note: str, **more: Any) -> dict[str, Any]:
        return {"measure": measure, "what": what, "value": value, "unit": "", "note": note, **more}

    against = "load: swarm / bare Locust"
    rows = [
        row("load: Locust ceiling", "1 process(es)", 2000.0, "", processes=1),
        row(against, "1 process(es)", 0.93, "median of 3 rounds", processes=1),
        row(against, "2 process(es)", 0.875, "median of 3 rounds, ratios 0.84-0.90", processes=2),
        row("load: live view", "no-wait swarm", 0.9981, "farthest from 1 of 5 polls"),
    ]
    text = load_speed({"load_speed": entry(rows)})
    assert "not measured: `wrk` was not installed" in text
    assert (
        "The swarm against Locust alone, Locust processes: 1: 0.93x (median of 3 rounds); "
        "2: 0.88x (median of 3 rounds, ratios 0.84-0.90)."
    ) in text
    assert "The live view: 0.998 (farthest from 1 of 5 polls)." in text


def faults_cell(fault: str, limiter: str, **figures: Any) -> dict[str, Any]:
    return {
        "measure": "faults under load",
        "note": "20 s each, a fault every 2 s for 0.5 s, 200 users of the outage pattern",
        "fault": fault,
        "limiter": limiter,
        "value": 20,
        "runs": 20,
        "whole": 20,
        "found": {},
        "own_runs": {"over-admission": 0, "header-lies": 0},
        "undecided_per_fault": 301.5,
        "recovery_max": 0.15,
        "dates": ["2031-05-06"],
        **figures,
    }


def test_load_faults_gives_a_cell_per_fault_and_limiter_and_leaves_unmeasured_ones_out() -> None:
    rows = [
        faults_cell("kill-redis", "fixed-window-lua"),
        faults_cell(
            "kill-redis",
            "token-bucket-lua",
            found={"over-admission": 20, "header-lies": 4},
            own_runs={"over-admission": 1, "header-lies": 0},
            dates=["2031-05-07"],
        ),
        faults_cell("kill-instance", "fixed-window-lua", found={"immortal-key": 3}, value=19),
    ]
    text = BLOCKS["load-faults"]({"load_faults": entry(rows)})
    assert "made between 2031-05-06 and 2031-05-07" in text
    assert "| fault | `fixed-window-lua` | `token-bucket-lua` |" in text
    assert (
        "| `kill-redis` | 20/20 verdicts, 20 whole; clean; 301.5 undecided, 0.15 s | "
        "20/20 verdicts, 20 whole; header-lies in 4 (0 not a fault's), over-admission in 20 (1 "
        "not a fault's); 301.5 undecided, 0.15 s |"
    ) in text
    assert "| `kill-instance` | 19/20 verdicts, 20 whole; immortal-key in 3; 301.5 " in text
    assert text.rstrip().endswith("| - |")  # kill-instance was not run on token-bucket-lua
    assert "No run recorded yet" in BLOCKS["load-faults"]({"load_faults": entry([])})


def test_rendering_a_page_changes_its_blocks_and_nothing_else() -> None:
    benches = {"decisions": decisions_entry()}
    typed = f"{begin('decisions')}\n| typed | by hand |\n{end('decisions')}"
    page = f"# Speed\n\nBefore.\n\n{typed}\n\nAfter.\n"
    text, changed = rendered(page, benches)
    assert changed == ["decisions"]
    assert text == f"# Speed\n\nBefore.\n\n{render('decisions', benches)}\n\nAfter.\n"
    assert rendered(text, benches) == (text, [])


@pytest.mark.parametrize(
    ("page", "complaint"),
    [
        (f"{begin('nonsense')}\nx\n{end('nonsense')}\n", "no bench figures block is called"),
        (f"{begin('decisions')}\nx\n{end('explorer')}\n", "has no end marker"),
    ],
)
def test_a_block_of_no_known_name_or_left_open_is_an_error(page: str, complaint: str) -> None:
    with pytest.raises(ValueError, match=complaint):
        rendered(page, {})


def checkout(root: Path, page: str) -> Path:
    """A made-up checkout: results with a decisions entry, and ``page`` as docs/speed.md."""
    (root / "bench").mkdir()
    results = {"benches": {"decisions": decisions_entry()}}
    (root / "bench" / "results.json").write_text(json.dumps(results))
    (root / "docs").mkdir()
    (root / "docs" / "speed.md").write_text(page)
    return root / "docs" / "speed.md"


def test_check_fails_on_a_figure_typed_by_hand_until_rendered_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    benches = {"decisions": decisions_entry()}
    edited = render("decisions", benches).replace("36,100", "39,999")
    page = checkout(tmp_path, f"Intro.\n\n{edited}\n")
    assert main(["--check", "--root", str(tmp_path)]) == 1
    assert "docs/speed.md: stale decisions" in capsys.readouterr().out
    assert main(["--root", str(tmp_path)]) == 0
    assert page.read_text() == f"Intro.\n\n{render('decisions', benches)}\n"
    assert main(["--check", "--root", str(tmp_path)]) == 0


def test_no_results_file_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--check", "--root", str(tmp_path)]) == 2
    error = capsys.readouterr().err
    assert error.startswith("error: ")
    assert "results.json: No such file" in error
    assert error.count("\n") == 1
