"""A worker's spooled records reach the master's run directory whole, once each, and nowhere
else (``harness.load.traffic.shipping``)."""

from __future__ import annotations

from pathlib import Path

from ratelimit_harness.harness.history import Outcome, merge_journals
from ratelimit_harness.harness.load.contract.journals import Journals, journal_paths
from ratelimit_harness.harness.load.judge.promises import Promise, PromiseLog, read_promises
from ratelimit_harness.harness.load.traffic.shipping import Spool, receive
from tests.clocks import START

RULES = ("api", "login")


def test_what_a_worker_spools_is_judged_from_the_masters_run_directory(tmp_path: Path) -> None:
    spool = Spool()
    try:
        times = iter(START + n for n in range(100))
        journals = Journals(spool.root, "client", "locust", clock=lambda: next(times))
        first = journals["api"].invoke("alice")
        journals["api"].complete(first, Outcome.ALLOWED)
        PromiseLog(spool.root).add("api", Promise("alice", START, START + 1, 4))
        in_flight = journals["api"].invoke("bob")  # a report between its invoke and complete
        assert receive(tmp_path, "host_1a2b", spool.take(), RULES) == 4
        assert spool.take() == {}  # each line once
        journals["api"].complete(in_flight, Outcome.REJECTED)
        assert receive(tmp_path, "host_1a2b", spool.take(), RULES) == 1
        [path] = journal_paths(tmp_path, "client", "api")
        assert path.name.startswith("host_1a2b-locust-")
        history = merge_journals([path])
        assert [(op.key, op.outcome) for op in history] == [
            ("alice", Outcome.ALLOWED),
            ("bob", Outcome.REJECTED),
        ]
        assert read_promises(tmp_path, "api") == [Promise("alice", START, START + 1, 4)]
    finally:
        spool.remove()
    assert not spool.root.exists()


def test_a_report_writes_only_the_runs_rules_and_plain_names_inside_the_run_directory(
    tmp_path: Path,
) -> None:
    line = '{"event": "invoke"}\n'
    records = {
        "journals": {
            "api": {"../../escape.jsonl": line, "ok.jsonl": line, "not-a-journal.txt": line},
            "unknown-rule": {"x.jsonl": line},
            "../up": {"x.jsonl": line},
        },
        "elsewhere": {"api": {"x.jsonl": line}},
    }
    run_dir = tmp_path / "run"
    assert receive(run_dir, "../worker/1", records, RULES) == 1
    written = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.jsonl"))
    assert written == ["run/journals/client/api/.._worker_1-ok.jsonl"]
