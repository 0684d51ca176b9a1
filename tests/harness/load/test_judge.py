import json
from pathlib import Path

import pytest

from ratelimit_harness.harness.history import Operation, Outcome, read_history, write_history
from ratelimit_harness.harness.history.loads import OUTBOUND, LoadRecord, RuleRecord
from ratelimit_harness.harness.history.merge import merge_journals
from ratelimit_harness.harness.load.contract.rules import (
    DEFAULT_RULES,
    Rule,
    Rules,
    default_rules,
    validated,
)
from ratelimit_harness.harness.load.judge.client_view import ClientView
from ratelimit_harness.harness.load.judge.final import judge
from ratelimit_harness.harness.load.system.outbound import QUEUE_KEY
from ratelimit_harness.reports.load import LoadRun
from ratelimit_harness.reports.load_report import load_report
from ratelimit_harness.reports.terminal import render
from tests.clocks import START
from tests.harness.load.journal import Journal

ALLOWED, REJECTED = Outcome.ALLOWED, Outcome.REJECTED
# the outbound queue: one departure each 0.2 s, two waiting at most
RULES = validated(
    DEFAULT_RULES, Rule(OUTBOUND, "", "leaky-bucket", "leaky-bucket:rate=5,capacity=2")
)
NO_TTLS: dict[str, dict[str, float]] = {}


def traffic(run_dir: Path, rule: str, decisions: list[tuple[str, Outcome, float]]) -> None:
    """What an instance decided, and what its client saw a little before and after."""
    server = Journal(run_dir, rule)
    client = Journal(run_dir, rule, side="client", process="locust-0")
    for key, outcome, at in decisions:
        server.decide(key, outcome, at, 0.001)
        client.decide(key, outcome, at - 0.001, 0.003)


def client_json(run_dir: Path, lies: dict[str, list[tuple[str, str]]] | None = None) -> None:
    """``client.json`` as ClientView writes it: what every client journal shows, and lies."""
    view = ClientView()
    for path in (run_dir / "journals" / "client").glob("*/*.jsonl"):
        for op in merge_journals([path]):
            view.record(path.parent.name, str(op.outcome), op.latency)
    for rule, found in (lies or {}).items():
        for kind, witness in found:
            view.lie(rule, kind, witness)
    (run_dir / "client.json").write_text(json.dumps(view.to_json()))


def logins(key: str, count: int, start: float = 1.0) -> list[tuple[str, Outcome, float]]:
    return [(key, ALLOWED, start + n) for n in range(count)]


def only(verdict: LoadRecord, rule: str) -> RuleRecord:
    (found,) = [r for r in verdict.rules if r.name == rule]
    return found


def summary(verdict: LoadRecord) -> str:
    """The verdict as the terminal shows it."""
    return render(load_report(LoadRun(Path("no-such-run"), verdict)))


def test_a_valid_run_is_valid(tmp_path: Path) -> None:
    traffic(tmp_path, "login", [*logins("alice", 5), ("alice", REJECTED, 7.0)])
    traffic(tmp_path, "api", [("k1", ALLOWED, 1.0), ("k2", ALLOWED, 1.0)])
    client_json(tmp_path)
    verdict = judge(tmp_path, RULES, NO_TTLS, 4.0)
    assert verdict.valid
    assert [r.name for r in verdict.rules] == ["login", "api"]  # only rules with traffic
    login = only(verdict, "login")
    assert (login.server.operations, login.client.operations) == (6, 6)
    assert login.client_outcomes == {"allowed": 5, "rejected": 1}
    assert login.latency_ms["count"] == 6
    assert login.latency_ms["max"] == pytest.approx(3, rel=1e-3)
    assert login.found == set()
    assert verdict.requests == 8
    saved = verdict.to_json()
    assert saved["valid"] is True
    assert saved["requests_per_second"] == 2.0
    text = summary(verdict)
    assert "login" in text
    assert "8 requests in 4.0 s (2 requests/s)" in text
    assert "Load: no violation, no header lie." in text
    assert "(instances)" not in text  # no witness


def test_the_merged_histories_are_kept(tmp_path: Path) -> None:
    traffic(tmp_path, "login", [*logins("alice", 2), ("bob", REJECTED, 1.5)])
    judge(tmp_path, RULES, NO_TTLS, 1.0)
    server = read_history(tmp_path / "history" / "login.history.jsonl")
    client = read_history(tmp_path / "history" / "login.client.jsonl")
    assert [(op.key, op.outcome, op.invoke) for op in server] == [
        ("alice", ALLOWED, START + 1),
        ("bob", REJECTED, START + 1.5),
        ("alice", ALLOWED, START + 2),
    ]
    assert {op.process for op in server} == {"app-0"}
    assert {op.process for op in client} == {"locust-0"}
    assert len(client) == 3
    kept = sorted(p.name for p in (tmp_path / "history").iterdir())
    # no keys were read (NO_TTLS): no keys file says any were
    assert kept == ["login.client.jsonl", "login.history.jsonl", "login.verdict.json"]
    judge(tmp_path, RULES, {"login": {"rl:login:alice": 0.5}}, 1.0)
    assert (tmp_path / "history" / "login.keys.jsonl").read_text().count("rl:login:alice") == 1


def test_an_over_admission_is_found_on_the_server_side(tmp_path: Path) -> None:
    traffic(tmp_path, "login", logins("alice", 2))
    instance = Journal(tmp_path, "login", process="app-1")  # the second instance's share
    for n in range(5):
        instance.decide("mallory", ALLOWED, 10 + n, 0.001)
    instance.decide("mallory", ALLOWED, 10.5, 0.001)
    client_json(tmp_path)
    verdict = judge(tmp_path, RULES, NO_TTLS, 20.0)
    login = only(verdict, "login")
    assert login.server.kinds == {"over-admission"}
    assert login.server.violations[0].count == 1
    assert login.client.valid  # the clients saw only alice
    assert not login.valid
    assert not verdict.valid
    text = summary(verdict)
    assert "login over-admission (instances): 6 admissions can only fall in window" in text
    assert "Load: violations found." in text


def test_the_clients_count_is_shown_beside_the_instances_when_it_differs(tmp_path: Path) -> None:
    traffic(tmp_path, "login", logins("alice", 7))  # two over, seen by both sides
    client = Journal(tmp_path, "login", side="client", process="locust-1")
    client.decide("mallory", ALLOWED, 1, 0.01)
    client.decide("mallory", REJECTED, 2, 0.01)  # wrongful as the clients saw it
    verdict = judge(tmp_path, RULES, NO_TTLS, 10.0)
    login = only(verdict, "login")
    assert {v.kind: v.count for v in login.server.violations} == {"over-admission": 2}
    assert {v.kind: v.count for v in login.client.violations} == {
        "over-admission": 2,
        "wrongful-rejection": 1,
    }
    table = load_report(LoadRun(tmp_path, verdict)).table
    columns = dict(zip(table.headers, table.rows[0], strict=True))
    # both sides agree on the over-admissions: one count; not on the rejection
    assert columns["violations"] == "over-admission 2; wrongful-rejection 0 (clients: 1)"
    assert (columns["decisions"], columns["admitted"], columns["rejected"]) == ("7", "7", "0")
    assert "login wrongful-rejection (clients): rejected with at most 1 of 5" in summary(verdict)


def test_an_immortal_key_is_reported(tmp_path: Path) -> None:
    traffic(tmp_path, "login", logins("alice", 1))
    ttls = {"login": {"ratelimit:{alice}": -1.0, "ratelimit:{bob}": 30.0}, "api": {"x": -1.0}}
    verdict = judge(tmp_path, RULES, ttls, 1.0)
    login = only(verdict, "login")
    assert login.server.kinds == {"immortal-key"}
    assert [w.key for w in login.server.violations[0].witnesses] == ["ratelimit:{alice}"]
    assert not verdict.valid
    assert "login immortal-key (instances): ratelimit:{alice} has no TTL" in summary(verdict)


def outbound_run(run_dir: Path, departures: list[float]) -> None:
    """Three SMS accepted at once and sent at ``departures``, as the instance journalled them
    (accepted, then completed once sent) and as the provider recorded their arrivals; then one
    refused with the queue full."""
    instance = Journal(run_dir, OUTBOUND)
    arrivals = []
    for n, sent in enumerate(departures):
        accepted = n * 0.001 + 0.0005
        instance.decide(QUEUE_KEY, ALLOWED, n * 0.001, sent + 0.001 - n * 0.001, now=accepted)
        arrivals.append(
            Operation(
                "app-0", QUEUE_KEY, START + sent, START + sent + 0.001, ALLOWED, START + accepted
            )
        )
    instance.decide(QUEUE_KEY, REJECTED, 0.003, 0.001, now=0.0035)
    write_history(run_dir / "provider.jsonl", arrivals)


def test_outbound_departures_a_rate_apart_are_valid(tmp_path: Path) -> None:
    outbound_run(tmp_path, [0.0005, 0.2005, 0.4005])
    verdict = judge(tmp_path, RULES, NO_TTLS, 1.0)
    outbound = only(verdict, OUTBOUND)
    # the provider's three arrivals and the refusal, not the instance's three acceptances too
    # (which would make six admissions in 0.4 s, more than a bucket of one at 5/s allows)
    assert outbound.server.operations == 4
    assert outbound.server.metrics["outcomes"] == {"allowed": 3, "rejected": 1}
    assert outbound.valid, outbound.server.to_json()
    assert verdict.valid
    history = read_history(tmp_path / "history" / f"{OUTBOUND}.history.jsonl")
    departed = [op.invoke - START for op in history if op.outcome is ALLOWED]
    assert departed == pytest.approx([0.0005, 0.2005, 0.4005], abs=1e-6)


def test_outbound_departures_closer_than_the_rate_are_over_admission(tmp_path: Path) -> None:
    outbound_run(tmp_path, [0.0005, 0.0105, 0.4005])  # the second 10 ms after the first
    verdict = judge(tmp_path, RULES, NO_TTLS, 1.0)
    outbound = only(verdict, OUTBOUND)
    assert outbound.server.operations == 4
    assert {v.kind: v.count for v in outbound.server.violations} == {"over-admission": 1}
    (witness,) = outbound.server.violations[0].witnesses
    departures = [op.invoke - START for op in witness.operations]
    assert departures == pytest.approx([0.0005, 0.0105], abs=1e-6)  # as the provider saw them
    assert not verdict.valid
    assert f"{OUTBOUND} over-admission (instances): 2 admissions fall within" in summary(verdict)


@pytest.mark.xfail(
    strict=True,
    raises=AssertionError,
    reason="a bucket's over-admission count is one per disjoint Hall witness, a lower bound",
)
def test_three_departures_in_one_slot_are_two_over(tmp_path: Path) -> None:
    outbound_run(tmp_path, [0.0005, 0.0105, 0.0205])  # a bucket of one at 5/s allows one
    outbound = only(judge(tmp_path, RULES, NO_TTLS, 1.0), OUTBOUND)
    assert {v.kind: v.count for v in outbound.server.violations} == {"over-admission": 2}


def test_outbound_without_the_provider_record_counts_only_the_refusals(tmp_path: Path) -> None:
    outbound_run(tmp_path, [0.0005, 0.0105, 0.0205])
    (tmp_path / "provider.jsonl").unlink()
    outbound = only(judge(tmp_path, RULES, NO_TTLS, 1.0), OUTBOUND)
    assert outbound.server.metrics["outcomes"] == {"rejected": 1}


def test_a_header_lie_makes_the_run_invalid(tmp_path: Path) -> None:
    traffic(tmp_path, "api", [("k1", ALLOWED, 1.0)])
    witness = "200 with X-RateLimit-Remaining: 10, X-RateLimit-Limit: 10"
    client_json(tmp_path, {"api": [("remaining-over-budget", witness)] * 2})
    verdict = judge(tmp_path, default_rules(), NO_TTLS, 1.0)
    api = only(verdict, "api")
    assert api.server.valid
    assert api.client.valid
    assert api.header_lies == {"remaining-over-budget": 2}
    assert api.found == {"remaining-over-budget"}
    assert not api.valid
    assert not verdict.valid
    assert api.to_json()["header_lie_examples"] == {"remaining-over-budget": witness}
    text = summary(verdict)
    assert f"api header lie remaining-over-budget: {witness}" in text
    assert "Load: violations found." in text


def test_a_run_with_no_client_json_is_judged_by_its_journals(tmp_path: Path) -> None:
    traffic(tmp_path, "login", logins("alice", 1))
    verdict = judge(tmp_path, Rules(DEFAULT_RULES, RULES.outbound), NO_TTLS, 0.0)
    login = only(verdict, "login")
    assert (login.header_lies, login.latency_ms, login.client_outcomes) == ({}, {}, {})
    assert verdict.valid
    assert verdict.to_json()["requests_per_second"] == 0.0
    assert "Load: no violation, no header lie." in summary(verdict)


def test_a_run_without_traffic_says_so(tmp_path: Path) -> None:
    text = summary(judge(tmp_path, RULES, NO_TTLS, 3.0))
    assert text.startswith("Load: no request reached a rate-limited endpoint in 3.0 s.")
