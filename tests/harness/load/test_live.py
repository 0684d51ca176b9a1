from pathlib import Path
from typing import Any

from harness.history import Outcome
from harness.load.live import LiveJudge
from harness.load.promises import Promise, PromiseLog
from harness.load.rules import default_rules
from tests.clocks import START
from tests.harness.load.journal import Journal

RULES = default_rules()  # login: fixed-window:limit=5,window=900
ALLOWED, REJECTED = Outcome.ALLOWED, Outcome.REJECTED


def row(judge: LiveJudge, rule: str) -> dict[str, Any]:
    judge.update()
    (found,) = [r for r in judge.rows() if r["rule"] == rule]
    return found


def test_no_journal_is_an_empty_row_for_every_rule(tmp_path: Path) -> None:
    judge = LiveJudge(tmp_path, RULES)
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
    found = row(LiveJudge(tmp_path, RULES), "login")
    assert found | {"witness": ""} == {
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
    }


def test_a_remaining_promise_the_history_cannot_keep_is_counted_live(tmp_path: Path) -> None:
    journal = Journal(tmp_path, "login")
    for n in range(3):
        journal.decide("alice", ALLOWED, n)
    log = PromiseLog(tmp_path)
    log.add("login", Promise("alice", START + 1.5, START + 1.6, 2))  # 2 counted before: true
    judge = LiveJudge(tmp_path, RULES)
    assert row(judge, "login")["broken_promises"] == 0
    log.add("login", Promise("alice", START + 2.5, START + 2.6, 2))  # 3 before: 1 at most
    assert row(judge, "login")["broken_promises"] == 1


def test_an_over_admission_in_a_fixed_window_is_counted(tmp_path: Path) -> None:
    journal = Journal(tmp_path, "login")
    for n in range(7):  # two more than the window's 5
        journal.decide("mallory", ALLOWED, 100 + n)
    journal.decide("alice", ALLOWED, 100)
    journal.decide("eve", ALLOWED, 899.9)  # the window's last moment, and the next one's first
    journal.decide("eve", ALLOWED, 900)
    found = row(LiveJudge(tmp_path, RULES), "login")
    assert found["over-admission"] == 2
    assert found["wrongful-rejection"] == 0
    assert "7 admissions" in found["witness"]
    assert found["admitted"] == 10


def test_a_wrongful_rejection_is_counted(tmp_path: Path) -> None:
    journal = Journal(tmp_path, "login")
    journal.decide("alice", ALLOWED, 1)
    journal.decide("alice", REJECTED, 2)  # 1 of 5 used
    found = row(LiveJudge(tmp_path, RULES), "login")
    assert (found["over-admission"], found["wrongful-rejection"]) == (0, 1)
    assert "rejected with at most 1 of 5" in found["witness"]


def test_operations_in_flight_are_counted_as_in_flight(tmp_path: Path) -> None:
    journal = Journal(tmp_path, "login")
    for n in range(5):
        journal.decide("alice", ALLOWED, 1 + n)  # inside the window [0, 900), clear of its edge
    pending = [journal.invoke("alice", 10 + n) for n in range(2)]
    journal.invoke("carol", 11)
    judge = LiveJudge(tmp_path, RULES)
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
    assert row(LiveJudge(tmp_path, RULES), "login")["wrongful-rejection"] == 0


def test_a_growing_journal_is_read_once(tmp_path: Path) -> None:
    journal = Journal(tmp_path, "login")
    judge = LiveJudge(tmp_path, RULES)
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
    judge = LiveJudge(tmp_path, RULES)
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
    judge = LiveJudge(tmp_path, RULES)
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
    found = row(LiveJudge(tmp_path, RULES), "login")
    assert (found["decisions"], found["admitted"]) == (2, 2)
