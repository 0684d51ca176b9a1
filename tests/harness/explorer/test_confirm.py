"""A find that does not reproduce never crashes a run: the explorer re-runs each find before it
counts, reports one that does not show again as unconfirmed, and goes on; a run that real time
reached (the server expired a key itself) is void, not judged."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from ratelimit_harness.harness.checkers import Verdict
from ratelimit_harness.harness.checkers import check as judged
from ratelimit_harness.harness.cli import main
from ratelimit_harness.harness.explorer.schedule.run import Setup
from ratelimit_harness.harness.explorer.search import explore as explorer
from ratelimit_harness.harness.explorer.search.drawing import Space
from ratelimit_harness.harness.explorer.server.keyspace import Keyspace
from ratelimit_harness.harness.history import Outcome
from ratelimit_harness.harness.provision import RedisServer
from ratelimit_harness.limiters import Policy
from tests.harness.explorer import plugins
from tests.harness.explorer.schedules import run, steps

pytestmark = pytest.mark.integration
FIXED = "fixed-window:limit=1,window=10"
FLAKY = "tests.harness.explorer.plugins:over_admits_while_armed"
# no skew: the plug-in is correct then; no crash: every request that counted is known to have
ONLY_TIME = Space(nemeses=("stall",))


@pytest.fixture
def armed(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The plug-in over-admits until the explorer has judged one schedule a violation: that
    schedule is a find, and no re-run of it shows it again."""

    def check(*args: Any) -> Verdict:
        verdict = judged(*args)
        if not verdict.valid:
            plugins.ARMED.clear()
        return verdict

    monkeypatch.setattr(explorer, "check", check)
    plugins.ARMED.set()
    yield
    plugins.ARMED.clear()


@pytest.mark.usefixtures("armed")
def test_a_find_of_the_bounded_stage_that_does_not_show_again_is_unconfirmed(
    redis_server: RedisServer,
) -> None:
    setup = Setup(FLAKY, Policy.parse(FIXED), 2, redis_server.url)
    found = explorer.explore(setup, space=ONLY_TIME, max_examples=30, seed=1)
    assert found.found is None  # nothing confirmed: the limiter is judged clean
    assert found.unconfirmed_count == 1
    ((outcome, verdict),) = found.unconfirmed
    assert verdict.kinds == {"over-admission"}
    assert [op.outcome for op in outcome.history].count(Outcome.ALLOWED) >= 2  # kept, with trace
    assert any(line.what.startswith("EVALSHA") for line in outcome.trace)
    assert found.examples == found.bounded_runs + 30  # and the search went on to its end


@pytest.mark.usefixtures("armed")
def test_hypothesis_never_raises_flaky_failure_out_of_a_search(
    redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(explorer, "_bounded", lambda *_: False)  # the find is Hypothesis'
    setup = Setup(FLAKY, Policy.parse(FIXED), 2, redis_server.url)
    found = explorer.explore(setup, space=ONLY_TIME, max_examples=60, seed=1)
    assert found.unconfirmed_count == 1
    assert found.found is None
    assert found.examples == 60
    assert not found.search_ended


@pytest.mark.usefixtures("armed", "client")
def test_race_reports_an_unconfirmed_find_with_its_trace_and_goes_on(
    redis_server: RedisServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    summary = tmp_path / "race.json"
    args = ["race", "--limiter", FLAKY, "--policy", FIXED, "--max-examples", "5", "--seed", "1",
            "--redis-url", redis_server.url, "--trace", str(tmp_path / "t.json"),
            "--json", str(summary)]  # fmt: skip
    assert main(args) in (0, 1)  # skewed clocks break it for real; the flaky find must not
    out = capsys.readouterr().out
    head = "unconfirmed: 1 schedule(s) judged a violation once and not again on 3 re-runs"
    assert f"{head}, not counted; the first (over-admission):" in out
    trace = out.split(head)[1]
    assert "check(user:1) -> allowed" in trace
    said = json.loads(summary.read_text())
    assert said["unconfirmed_count"] == 1
    assert said["unconfirmed"][0]["found"] == ["over-admission"]
    assert said["unconfirmed"][0]["trace"]


def test_a_run_the_server_expired_a_key_in_is_void(
    redis_server: RedisServer, client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = Keyspace.close

    def expiring(keyspace: Keyspace, keys: Iterable[str]) -> int:
        client.set("short-lived", 1, px=1)  # a key the server will expire by itself
        while client.exists("short-lived"):
            pass
        return real(keyspace, keys)

    monkeypatch.setattr(Keyspace, "close", expiring)
    result, _ = run(redis_server.url, "fixed-window-lua", FIXED, steps(0, 1))
    assert result.void == "the server expired 1 key(s) by real time"


def test_a_run_no_key_expired_in_is_judged(redis_server: RedisServer) -> None:
    result, _ = run(redis_server.url, "fixed-window-lua", FIXED, steps(0, 1))
    assert result.void == ""


def test_void_runs_are_not_judged(
    redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Keyspace, "close", lambda *_: 1)  # every run reached by real time
    setup = Setup("naive-get-set", Policy.parse(FIXED), 2, redis_server.url)
    found = explorer.explore(setup, max_examples=20, seed=1)
    assert found.found is None  # its races are all there, and none is judged
    assert found.void == found.examples > 0
