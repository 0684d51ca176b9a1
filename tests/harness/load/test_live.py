import json
import math
import random
import threading
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from ratelimit_harness.harness.checkers import check
from ratelimit_harness.harness.history import Operation, Outcome, format_operation, merge_journals
from ratelimit_harness.harness.load import run
from ratelimit_harness.harness.load.contract.journals import Completions, journal_paths
from ratelimit_harness.harness.load.contract.rules import default_rules
from ratelimit_harness.harness.load.judge.final import judge as judge_run
from ratelimit_harness.harness.load.judge.final import keep_keys_before
from ratelimit_harness.harness.load.judge.live import KINDS, SETTLE, LiveJudge
from ratelimit_harness.harness.load.judge.promises import Promise, PromiseLog
from ratelimit_harness.harness.load.system.outbound import QUEUE_KEY
from ratelimit_harness.harness.provision import RedisServer
from tests.clocks import START, ManualClock
from tests.harness.load.journal import Journal

pytestmark = pytest.mark.realtime  # on the wall clock: run one at a time

RULES = default_rules()  # login: fixed-window:limit=5,window=900
ALLOWED, REJECTED = Outcome.ALLOWED, Outcome.REJECTED
API_POLICY = next(r for r in RULES.all if r.name == "api").judge_policy  # 10 a second
LATER = 10_000.0  # seconds after START: every journal a test writes has long gone quiet


def live(run_dir: Path, at: float = LATER) -> LiveJudge:
    """A live judge whose rounds begin ``at`` seconds after START (its clock moves by hand)."""
    return LiveJudge(run_dir, RULES, clock=ManualClock(START + at))


def row(judge: LiveJudge, rule: str) -> dict[str, Any]:
    judge.update()
    (found,) = [r for r in judge.rows() if r["rule"] == rule]
    return found


def test_no_journal_is_an_empty_row_for_every_rule(tmp_path: Path) -> None:
    judge = live(tmp_path)
    judge.update()
    rows = judge.rows()
    assert [r["rule"] for r in rows] == RULES.names
    for found in rows:
        assert found["decisions"] == found["identities"] == found["in_flight"] == 0
        assert found["over-admission"] == found["wrongful-rejection"] == 0
        assert found["witness"] == ""


def test_counts_of_a_valid_journal(tmp_path: Path) -> None:
    journal = Journal(tmp_path, "login")
    for n in range(5):
        journal.decide("alice", ALLOWED, n)
    journal.decide("alice", REJECTED, 10)
    journal.decide("bob", ALLOWED, 11)
    journal.decide("bob", Outcome.UNKNOWN, 12)
    found = row(live(tmp_path), "login")
    assert found["chart"]["key"] == "alice"  # no witness: the identity admitted most
    assert found | {"witness": "", "chart": None} == {
        "rule": "login",
        "limiter": "fixed-window-lua",
        "policy": "fixed-window:limit=5,window=900",
        "identities": 2,
        "decisions": 8,
        "in_flight": 0,
        "admitted": 6,
        "rejected": 1,
        "unknown": 1,
        "policy_allows": 10,  # 5 each, both inside one window
        "over-admission": 0,
        "wrongful-rejection": 0,
        "broken_promises": 0,
        "witness": "",
        "horizon": START + LATER - SETTLE,  # both journals long quiet: complete until then
        "chart": None,
    }


def test_decisions_count_once_read_and_the_rest_once_behind_the_horizon(tmp_path: Path) -> None:
    first = Journal(tmp_path, "login")
    first.decide("alice", ALLOWED, 0)
    first.decide("alice", ALLOWED, 5)
    Journal(tmp_path, "login", process="app-1").decide("bob", ALLOWED, 1)
    # at 3, app-1 is quiet since 1: complete up to SETTLE before the round, so the horizon is 2
    found = row(live(tmp_path, at=3.0), "login")
    assert found["horizon"] == START + 3.0 - SETTLE
    assert found["decisions"] == 3  # every one read is a fact
    assert found["admitted"] == 2  # what the judge has judged stands on the horizon
    assert found["policy_allows"] == 10  # 5 each, for alice and bob


def test_a_remaining_promise_the_history_cannot_keep_is_counted_live(tmp_path: Path) -> None:
    journal = Journal(tmp_path, "login")
    for n in range(3):
        journal.decide("alice", ALLOWED, n)
    log = PromiseLog(tmp_path)
    log.add("login", Promise("alice", START + 1.5, START + 1.6, 2))  # 2 counted before: true
    judge = live(tmp_path)
    assert row(judge, "login")["broken_promises"] == 0
    log.add("login", Promise("alice", START + 2.5, START + 2.6, 2))  # 3 before: 1 at most
    assert row(judge, "login")["broken_promises"] == 1
    assert row(judge, "login")["broken_promises"] == 1  # each judged once, counted once


def test_a_promise_is_judged_once_its_answer_is_behind_the_horizon(tmp_path: Path) -> None:
    """Until then a give-back before its answer may still come to light: the count waits."""
    journal = Journal(tmp_path, "login")
    for n in range(3):
        journal.decide("alice", ALLOWED, n)
    PromiseLog(tmp_path).add("login", Promise("alice", START + 2.5, START + 30.0, 2))
    # the journal holds nothing past 2.x: quiet, it is complete until SETTLE before the round
    clock = ManualClock(START + 20.0)
    judge = LiveJudge(tmp_path, RULES, clock=clock)
    assert row(judge, "login")["broken_promises"] == 0
    clock.advance(20.0)  # the horizon is past 30 now
    assert row(judge, "login")["broken_promises"] == 1


def test_an_over_admission_in_a_fixed_window_is_counted(tmp_path: Path) -> None:
    journal = Journal(tmp_path, "login")
    for n in range(7):  # two more than the window's 5
        journal.decide("mallory", ALLOWED, 100 + n)
    journal.decide("alice", ALLOWED, 100)
    journal.decide("eve", ALLOWED, 899.9)  # the window's last moment, and the next one's first
    journal.decide("eve", ALLOWED, 900)
    found = row(live(tmp_path), "login")
    assert found["over-admission"] == 2
    assert found["wrongful-rejection"] == 0
    assert "7 admissions" in found["witness"]
    assert found["admitted"] == 10


def test_the_chart_follows_the_first_witness_in_seconds_since_the_run_began(
    tmp_path: Path,
) -> None:
    """mallory's 7 admissions in one window of 900 s, of 5: the chart follows mallory, its span
    holding 7 is marked by the witness, and the witness's window is said from the run's start
    (alice's first request, 50 s before mallory's)."""
    journal = Journal(tmp_path, "login")
    journal.decide("alice", ALLOWED, 50)
    for n in range(7):
        journal.decide("mallory", ALLOWED, 100 + n)
    found = row(live(tmp_path), "login")
    chart = found["chart"]
    assert (chart["key"], chart["span"], chart["most"], chart["aligned"]) == (
        "mallory",
        900,
        5,
        True,
    )
    window_start = (START + 100) // 900 * 900 - (START + 50)  # where mallory's window began
    assert [window_start, 7] in chart["counts"]
    assert chart["counts"][-1][0] <= LATER - SETTLE - 50 < chart["counts"][-1][0] + 900
    [(begins, ends)] = chart["witnesses"]
    assert (begins, ends) == (window_start, window_start + 900)
    assert f"window [{window_start:.3f}, {window_start + 900:.3f})" in found["witness"]


def test_a_request_given_back_makes_room_live(tmp_path: Path) -> None:
    rules = RULES.with_default(None, None, refund="failed")  # api: 10 a second
    journal = Journal(tmp_path, "api")
    tokens = [journal.decide("alice", ALLOWED, 100 + n / 100) for n in range(10)]
    journal.give_back(tokens[0], 100.2)
    journal.decide("alice", ALLOWED, 100.3)  # the room the give-back made
    judge = LiveJudge(tmp_path, rules, clock=ManualClock(START + LATER))
    assert row(judge, "api")["over-admission"] == 0
    journal.decide("alice", REJECTED, 100.4)  # full again: rightly refused
    journal.give_back(tokens[1], 100.5)
    journal.decide("alice", REJECTED, 100.6)  # a limiter that ignored the give-back
    assert row(judge, "api")["wrongful-rejection"] == 1


def test_a_wrongful_rejection_is_counted(tmp_path: Path) -> None:
    journal = Journal(tmp_path, "login")
    journal.decide("alice", ALLOWED, 1)
    journal.decide("alice", REJECTED, 2)  # 1 of 5 used
    found = row(live(tmp_path), "login")
    assert (found["over-admission"], found["wrongful-rejection"]) == (0, 1)
    assert "rejected with at most 1 of 5" in found["witness"]


def test_rejections_the_final_verdict_cannot_judge_are_not_counted_live(tmp_path: Path) -> None:
    keep_keys_before(tmp_path, {"login": {"rl:alice": -1.0}, "api": {}})
    journal = Journal(tmp_path, "login")
    journal.decide("alice", ALLOWED, 1)
    journal.decide("alice", REJECTED, 2)  # wrongful, but for what rl:alice held already
    judge = live(tmp_path)
    found = row(judge, "login")
    assert (found["over-admission"], found["wrongful-rejection"]) == (0, None)
    assert row(judge, "api")["wrongful-rejection"] == 0  # no keys of its were there


def test_operations_in_flight_are_counted_as_in_flight(tmp_path: Path) -> None:
    journal = Journal(tmp_path, "login")
    for n in range(5):
        journal.decide("alice", ALLOWED, 1 + n)  # inside the window [0, 900), clear of its edge
    pending = [journal.invoke("alice", 10 + n) for n in range(2)]
    journal.invoke("carol", 11)
    judge = live(tmp_path)
    found = row(judge, "login")
    assert (found["in_flight"], found["decisions"], found["identities"]) == (3, 5, 2)
    assert found["over-admission"] == 0  # one in flight may yet be refused
    for token in pending:
        journal.complete(token, ALLOWED, 20)
    found = row(judge, "login")
    assert (found["in_flight"], found["decisions"], found["admitted"]) == (1, 7, 7)
    assert found["over-admission"] == 2


def test_a_refusal_in_flight_gets_the_benefit_of_the_doubt(tmp_path: Path) -> None:
    journal = Journal(tmp_path, "login")
    for n in range(4):
        journal.decide("alice", ALLOWED, n)
    journal.invoke("alice", 5)  # may have counted
    journal.decide("alice", REJECTED, 6)
    assert row(live(tmp_path), "login")["wrongful-rejection"] == 0


def test_a_growing_journal_is_read_once(tmp_path: Path) -> None:
    journal = Journal(tmp_path, "login")
    judge = live(tmp_path)
    for n in range(6):
        journal.decide("mallory", ALLOWED, 1 + n)  # clear of the window edge at 0
    first = row(judge, "login")
    assert (first["decisions"], first["over-admission"]) == (6, 1)
    assert row(judge, "login") == first  # nothing new: nothing changes
    journal.decide("mallory", ALLOWED, 10)
    journal.decide("bob", REJECTED, 10)
    second = row(judge, "login")
    assert (second["decisions"], second["admitted"], second["rejected"]) == (8, 7, 1)
    assert second["over-admission"] == 2  # the identity re-judged, not added to its last count
    assert second["identities"] == 2


def test_journals_of_several_instances_and_rules(tmp_path: Path) -> None:
    one, two = (
        Journal(tmp_path, "login"),
        Journal(tmp_path, "login", process="app-1"),
    )
    api = Journal(tmp_path, "api")
    for n in range(3):
        one.decide("mallory", ALLOWED, 1 + n)
        two.decide("mallory", ALLOWED, 1 + n + 0.5)  # each counted its share: 6 in one window
    pending = [one.invoke("alice", 10), two.invoke("alice", 10)]  # the same op number in each
    two.complete(pending[1], ALLOWED, 11)
    api.decide("mallory", ALLOWED, 1)
    judge = live(tmp_path)
    login = row(judge, "login")
    assert (login["decisions"], login["in_flight"], login["over-admission"]) == (7, 1, 1)
    assert row(judge, "api")["decisions"] == 1
    assert row(judge, "send-otp")["decisions"] == 0


def test_a_torn_last_line_is_read_once_it_is_whole(tmp_path: Path) -> None:
    scratch = Journal(tmp_path / "scratch", "login")
    for n in range(6):
        scratch.decide("mallory", ALLOWED, 1 + n)  # clear of the window edge at 0
    text = scratch.path.read_bytes()
    cut = text.rindex(b'"outcome"')  # inside the last completion
    journal = tmp_path / "journals" / "server" / "login" / "app-0-1.jsonl"
    journal.parent.mkdir(parents=True)
    journal.write_bytes(text[:cut])
    judge = live(tmp_path)
    torn = row(judge, "login")
    assert (torn["decisions"], torn["in_flight"], torn["over-admission"]) == (5, 1, 0)
    with journal.open("ab") as file:
        file.write(text[cut:-1])  # all but the newline
    assert row(judge, "login") == torn
    with journal.open("ab") as file:
        file.write(text[-1:])
    whole = row(judge, "login")
    assert (whole["decisions"], whole["in_flight"], whole["over-admission"]) == (6, 0, 1)


def test_a_line_that_is_not_a_record_is_skipped(tmp_path: Path) -> None:
    journal = Journal(tmp_path, "login")
    journal.decide("alice", ALLOWED, 1)
    with journal.path.open("ab") as file:
        file.write(b'not json\n{"event": "other"}\n')
    journal.decide("alice", ALLOWED, 2)
    found = row(live(tmp_path), "login")
    assert (found["decisions"], found["admitted"]) == (2, 2)


def test_a_rejection_waits_until_every_journal_has_caught_up_with_it(tmp_path: Path) -> None:
    one, two = Journal(tmp_path, "login"), Journal(tmp_path, "login", process="app-1")
    for n in range(4):
        one.decide("alice", ALLOWED, 1 + n)  # 4 of the window's 5
    two.decide("alice", REJECTED, 6)  # app-0 admitted a fifth at 5.5: not in its journal yet
    clock = ManualClock(START + 6.2)
    judge = LiveJudge(tmp_path, RULES, clock=clock)
    early = row(judge, "login")
    # read as far as each journal goes, the rejection had 4 of 5 used: a wrongful rejection
    assert early["wrongful-rejection"] == 0
    assert early["horizon"] == START + 6.2 - SETTLE  # app-0 quiet since 4.001
    assert (early["admitted"], early["rejected"]) == (4, 0)  # the rejection is past it
    assert early["decisions"] == 5  # but read: a decision is a fact
    one.decide("alice", ALLOWED, 5.5)  # app-0's journal catches up
    clock.now = START + 7.5
    caught_up = row(judge, "login")
    assert (caught_up["decisions"], caught_up["admitted"], caught_up["rejected"]) == (6, 5, 1)
    assert caught_up["wrongful-rejection"] == 0


def test_busy_journals_are_judged_up_to_the_last_instant_they_all_reached(
    tmp_path: Path,
) -> None:
    one, two = Journal(tmp_path, "login"), Journal(tmp_path, "login", process="app-1")
    for n in range(6):
        one.decide("mallory", ALLOWED, 1 + n * 0.1)  # six in one window: one too many
        two.decide("bob", ALLOWED, 1.05 + n * 0.1)
    one.decide("carol", ALLOWED, 1.58)
    found = row(LiveJudge(tmp_path, RULES, clock=ManualClock(START + 1.6)), "login")
    # app-1's last record, well after 1.6 - SETTLE: its decision is not before it, but in flight
    assert found["horizon"] == pytest.approx(START + 1.551)
    assert (found["over-admission"], found["admitted"], found["in_flight"]) == (1, 11, 1)
    assert found["decisions"] == 13  # every one read


def test_an_operation_completed_past_the_horizon_is_still_in_flight(tmp_path: Path) -> None:
    one, two = Journal(tmp_path, "login"), Journal(tmp_path, "login", process="app-1")
    for n in range(4):
        one.decide("alice", ALLOWED, 1 + n)
    token = one.invoke("alice", 5)
    two.decide("alice", REJECTED, 6)  # app-0's fifth may have counted before it
    two.decide("bob", ALLOWED, 8)
    one.complete(token, REJECTED, 9)  # known once the horizon passes 9: it did not count
    judge = LiveJudge(tmp_path, RULES, clock=ManualClock(START + 9.5))
    found = row(judge, "login")
    assert found["horizon"] == START + 9.5 - SETTLE  # app-1 quiet since 8.001
    assert (found["in_flight"], found["wrongful-rejection"]) == (1, 0)
    judge.clock = ManualClock(START + LATER)
    found = row(judge, "login")
    assert (found["in_flight"], found["wrongful-rejection"]) == (0, 2)  # both, 4 of 5 used


class LaggingInstances:
    """App instances sharing one correct fixed-window limiter (the api rule's 10 a second per
    identity), each journalling in the order it stamps but writing each record up to ``lag``
    seconds late (as a process's journal trails the others')."""

    def __init__(self, run_dir: Path, instances: int, seconds: float, seed: int, lag: float):
        rng = random.Random(seed)
        requests = []  # (instance, key, invoke, the instant of the decision, complete)
        for instance in range(instances):
            at = rng.uniform(0, 0.01)
            while at < seconds:
                decided = at + rng.uniform(0, 0.004)
                complete = decided + rng.uniform(0, 0.004)
                requests.append((instance, rng.choice(["k0", "k1"]), at, decided, complete))
                at += rng.uniform(0.002, 0.03)
        counted: dict[tuple[str, int], int] = defaultdict(int)
        records: list[list[tuple[float, int, str, Outcome]]] = [[] for _ in range(instances)]
        for n, (instance, key, invoke, decided, complete) in enumerate(
            sorted(requests, key=lambda request: request[3])
        ):
            window = (key, math.floor(decided))  # START is a whole second
            outcome = ALLOWED if counted[window] < 10 else REJECTED
            counted[window] += 1
            records[instance] += [(invoke, n, key, Outcome.UNKNOWN), (complete, n, key, outcome)]
        self.journals = [Journal(run_dir, "api", process=f"app-{i}") for i in range(instances)]
        self.unwritten: list[list[tuple[float, float, int, str, Outcome]]] = []
        for stamped_in_order in records:
            written, writes = -math.inf, []
            for stamped, n, key, outcome in sorted(stamped_in_order):
                written = max(written, stamped + rng.uniform(0, lag))
                writes.append((written, stamped, n, key, outcome))
            self.unwritten.append(writes[::-1])
        self.tokens: dict[int, int] = {}
        self.requests = len(requests)

    def write_until(self, instant: float, stagger: float) -> None:
        """What each journal holds when read at ``instant`` (the i-th ``i * stagger`` later,
        as the judge reads one after another)."""
        for i, (journal, unwritten) in enumerate(zip(self.journals, self.unwritten, strict=True)):
            while unwritten and unwritten[-1][0] <= instant + i * stagger:
                _, stamped, n, key, outcome = unwritten.pop()
                if n in self.tokens:
                    journal.complete(self.tokens.pop(n), outcome, stamped)
                else:
                    self.tokens[n] = journal.invoke(key, stamped)


def test_live_counts_never_exceed_the_final_verdicts_though_journals_lag(tmp_path: Path) -> None:
    instances = LaggingInstances(tmp_path, instances=3, seconds=6, seed=7, lag=0.4)
    clock = ManualClock()
    judge = LiveJudge(tmp_path, RULES, clock=clock)
    live_counts, as_far_as_read = [], []
    for poll in range(40):  # every 0.2 s, past the end
        clock.now = START + 0.2 * poll
        instances.write_until(0.2 * poll, stagger=0.01)
        live_counts.append({kind: row(judge, "api")[kind] for kind in KINDS})
        read = check(merge_journals(journal_paths(tmp_path, "server", "api")), API_POLICY)
        as_far_as_read.append({kind: read.count(kind) for kind in KINDS})
    clock.now = START + LATER
    final_row = row(judge, "api")
    (final,) = [r.server for r in judge_run(tmp_path, RULES, {}, 8).rules if r.name == "api"]
    assert final.valid  # a correct limiter
    assert final_row["decisions"] == final.operations == instances.requests
    for counts in live_counts:
        assert all(counts[kind] <= final.count(kind) for kind in KINDS), counts
    # the journals did lag: judged as far as each was read, the history over-counts
    assert any(counts["wrongful-rejection"] > 0 for counts in as_far_as_read)


def test_the_outbound_rule_counts_accepted_calls_by_their_arrival_like_the_final_verdict(
    tmp_path: Path,
) -> None:
    instance = Journal(tmp_path, "outbound")
    arrivals = []
    for n in range(5):  # accepted at once, all sent within a millisecond: 10 a second at most
        instance.decide(QUEUE_KEY, ALLOWED, 1, took=0.5 + n * 0.1, now=1)
        departs = START + 1.5 + n * 0.0002
        arrivals.append(
            Operation("app-0", QUEUE_KEY, departs, departs + 0.0001, ALLOWED, START + 1)
        )
    instance.decide(QUEUE_KEY, REJECTED, 3, now=3)
    (tmp_path / "provider.jsonl").write_text("".join(map(format_operation, arrivals)))
    clock = ManualClock(START + 1.50045 + SETTLE)  # the provider's record known until 1.50045
    judge = LiveJudge(tmp_path, RULES, clock=clock)
    early = row(judge, "outbound")
    assert early["horizon"] == pytest.approx(START + 1.50045)  # the instance's reached 3.001
    # 2 arrived, 1 on its way, 4 calls the instance has not seen answered (the first, answered
    # at 1.5, counts by its arrival)
    assert (early["admitted"] + early["rejected"], early["in_flight"]) == (2, 5)
    assert early["decisions"] == 6  # the instance's, every one read
    clock.now = START + LATER
    found = row(judge, "outbound")
    (final,) = [r.server for r in judge_run(tmp_path, RULES, {}, 4).rules if r.name == "outbound"]
    assert final.count("over-admission") > 0
    assert {kind: found[kind] for kind in KINDS} == {kind: final.count(kind) for kind in KINDS}
    assert (found["decisions"], found["admitted"], found["rejected"]) == (6, 5, 1)


@pytest.mark.slow
@pytest.mark.integration
def test_a_real_run_of_a_correct_limiter_counts_nothing_live_its_verdict_does_not(
    redis_server: RedisServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(run, "RUNS", tmp_path / "runs")
    rounds: dict[float, list[dict[str, Any]]] = {}  # each round live.json held, by its time
    done = threading.Event()

    def watch() -> None:
        while not done.wait(0.1):
            for live_file in (tmp_path / "runs").glob("*/live.json"):
                written = json.loads(live_file.read_text())  # replaced whole, never torn
                rounds[written["time"]] = written["rules"]

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        rules = default_rules().with_default("fixed-window-lua", None)
        swarm = run.Swarm(run.locustfile_path("burst"), users=30, spawn_rate=30, duration=8)
        _, verdict = run.run_load(run.System(rules, redis_server, 4), swarm)
    finally:
        done.set()
        watcher.join()
    final = {r.name: {kind: r.server.count(kind) for kind in KINDS} for r in verdict.rules}
    assert verdict.valid
    assert len(rounds) >= 3  # a round every 2 s
    judged = 0
    for rows in rounds.values():
        for live_row in rows:
            nothing = dict.fromkeys(KINDS, 0)
            assert all(live_row[k] <= final.get(live_row["rule"], nothing)[k] for k in KINDS)
            judged += live_row["decisions"]
    assert judged > 500  # the rounds did judge the swarm's decisions


def test_decisions_are_counted_as_fresh_as_the_journals_and_each_once(tmp_path: Path) -> None:
    """What the tab and the progress line show as decisions: every complete record written so
    far, in every journal of the rule (a new one too), never a half-written one, each once."""
    count = Completions(tmp_path, "server")
    first = Journal(tmp_path, "login")
    first.decide("alice", ALLOWED, 0)
    pending = first.invoke("bob", 1)
    assert count.count("login") == 1  # bob's request is in flight: no decision yet
    first.complete(pending, REJECTED, 2)
    Journal(tmp_path, "login", process="app-1").decide("carol", ALLOWED, 3)
    with first.path.open("ab") as journal:  # a record cut short: its writer was killed
        journal.write(b'{"event": "complete", "op": 9')
    assert count.count("login") == 3
    assert count.count("login") == 3
    assert count.count("api") == 0


def test_a_buckets_chart_counts_spans_from_the_runs_start(tmp_path: Path) -> None:
    """api-pro's bucket (100, refilled at 100/s) allows 200 in any second: the chart counts
    admissions per second since the first request, not per aligned window."""
    journal = Journal(tmp_path, "api-pro")
    for at in (10.25, 10.75, 12.5):
        journal.decide("pro-1", ALLOWED, at)
    chart = row(live(tmp_path, at=14.0), "api-pro")["chart"]  # the horizon: 13 s
    assert (chart["key"], chart["span"], chart["most"], chart["aligned"]) == (
        "pro-1",
        1.0,
        200.0,
        False,
    )
    assert chart["counts"] == [[0.0, 2], [1.0, 0], [2.0, 1]]
    assert chart["witnesses"] == []
