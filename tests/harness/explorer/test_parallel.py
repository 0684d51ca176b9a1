"""race-test's rows on several worker processes, each with a Redis of its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from ratelimit_harness.harness.explorer.campaign import Target, targets, weight
from ratelimit_harness.harness.explorer.parallel import RowJob, run_rows, servers_for
from ratelimit_harness.harness.history.races import RaceTestRow

pytestmark = pytest.mark.integration


def test_rows_come_back_in_order_from_two_workers_each_on_its_own_redis(tmp_path: Path) -> None:
    chosen = [t for t in targets() if t.label in ("naive-get-set", "fixed-window-lua")]
    done: list[str] = []

    def on_row(target: Target, row: RaceTestRow) -> None:
        done.append(target.label)

    job = RowJob(True, 30, 1, tmp_path, 0.0, count_unseen=True)
    with servers_for(2, "embedded", None) as servers:
        assert len({server.url for server in servers}) == 2
        rows = run_rows(chosen, job, servers, on_row, lambda label: lambda found: None)
    assert [row.name for row in rows] == [t.label for t in chosen]
    assert sorted(done) == sorted(t.label for t in chosen)  # told of each as it ended
    assert [row.matches for row in rows] == [True, True]
    assert rows[0].found_flaws == ["over-admission", "wrongful-rejection"]
    assert [row.unseen for row in rows] == [0, 0]  # counted in each worker: none


def test_a_row_whose_limiter_sent_commands_unseen_does_not_match() -> None:
    policy = "fixed-window:limit=1,window=10"
    row = RaceTestRow("mine", "mine", policy, policy, [], unseen=3)
    assert not row.matches
    assert RaceTestRow.from_json(row.to_json()) == row


def test_a_given_redis_is_one_server_whatever_the_jobs() -> None:
    with (
        servers_for(2, "embedded", None) as started,
        servers_for(4, None, started[0].url) as given,
    ):
        assert [server.url for server in given] == [started[0].url]


def test_the_rows_weighed_costliest_are_programs_and_those_with_more_flaws() -> None:
    every = {t.label: t for t in targets(js=True)}
    assert weight(every["naive-get-set.js"]) > weight(every["naive-get-set"])
    assert weight(every["fixed-window-incr-expire"]) > weight(every["naive-get-set"])
    assert weight(every["naive-get-set"]) > weight(every["fixed-window-lua"])  # 2 flaws, none
