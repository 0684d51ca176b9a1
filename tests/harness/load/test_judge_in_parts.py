"""A load run's verdict is the same whether its histories are merged and judged in memory or in
runs on disk and parts: over-admissions, wrongful rejections, promises of ``X-RateLimit-Remaining``
broken, requests lost in flight, and what each fault did. A full disk while merging is said in
one line; a journal's invokes are counted a block at a time."""

from __future__ import annotations

import errno
import json
import os
import random
from pathlib import Path

import pytest

from ratelimit_harness.harness.checkers import partitions
from ratelimit_harness.harness.checkers.stream.busy import Streamed
from ratelimit_harness.harness.checkers.stream.common import Found
from ratelimit_harness.harness.errors import OutputError
from ratelimit_harness.harness.history import Outcome, merge
from ratelimit_harness.harness.load.contract import journals
from ratelimit_harness.harness.load.contract.journals import invokes
from ratelimit_harness.harness.load.contract.rules import DEFAULT_OUTBOUND, DEFAULT_RULES, validated
from ratelimit_harness.harness.load.faults import effects as fault_effects
from ratelimit_harness.harness.load.judge.final import judge
from ratelimit_harness.harness.load.judge.promises import Promise, PromiseLog
from tests.clocks import START
from tests.harness.load.journal import Journal

RULES = validated(DEFAULT_RULES, DEFAULT_OUTBOUND)
ALLOWED, REJECTED, UNKNOWN = Outcome.ALLOWED, Outcome.REJECTED, Outcome.UNKNOWN


def a_run(run_dir: Path) -> None:
    """Two instances and two Locust processes on ``api`` (10 a second) and ``login``, over
    twelve identities; an instance admits too much now and then, and tells some clients more
    remain than do; Redis is killed once (ended) and again (never ended)."""
    draw = random.Random(7)
    promises = PromiseLog(run_dir)
    for rule in ("api", "login"):
        for n in range(2):
            server = Journal(run_dir, rule, process=f"app-{n}")
            client = Journal(run_dir, rule, side="client", process=f"locust-{n}")
            counts: dict[tuple[str, int], int] = {}
            for step in range(300):
                at = step * 0.05 + n * 0.01
                key = f"user-{draw.randrange(12)}"
                window = (key, int(at))
                counts[window] = counts.get(window, 0) + 1
                outcome = ALLOWED if counts[window] <= 10 or draw.random() < 0.1 else REJECTED
                if draw.random() < 0.02:  # in flight when the instance died
                    server.invoke(key, at)
                    client.decide(key, UNKNOWN, at - 0.001, 0.01)
                    continue
                server.decide(key, outcome, at, 0.002)
                client.decide(key, outcome, at - 0.001, 0.004)
                if outcome is ALLOWED:
                    remaining = max(0, 10 - counts[window]) + (draw.random() < 0.05)
                    sent, received = START + at - 0.001, START + at + 0.003
                    promises.add(rule, Promise(key, sent, received, remaining))
    faults = [
        {"fault": "kill-redis", "turn": 0, "phase": "start", "time": START + 3.0},
        {"fault": "kill-redis", "turn": 0, "phase": "end", "time": START + 4.5},
        {"fault": "kill-redis", "turn": 1, "phase": "start", "time": START + 12.0},
    ]
    (run_dir / "faults.jsonl").write_text("".join(json.dumps(f) + "\n" for f in faults))


def test_a_run_judged_in_parts_gets_the_verdict_of_one_judged_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a_run(tmp_path)
    ttls = {"api": {"rl:api:user-1": -1.0}}
    heard: list[str] = []

    def told(stage: str, done: int, of: int) -> None:
        heard.append(stage)

    whole = judge(tmp_path, RULES, ttls, None, progress=told).to_json()
    assert heard == []  # small: the run's output stays as it was
    assert whole["rules"][0]["server"]["violations"]  # something to find, in parts too
    assert any(rule["header_lies"] for rule in whole["rules"])
    assert any(f["effects"]["api"]["lost"] for f in whole["faults"])
    kept = (tmp_path / "history" / "api.history.jsonl").read_bytes()
    monkeypatch.setattr(partitions, "PART_BYTES", 2000)
    monkeypatch.setattr(merge, "RUN_OPS", 50)
    monkeypatch.setattr(fault_effects, "BLOCK", 7)  # the clients' columns scanned in blocks
    monkeypatch.setattr(fault_effects, "READ_OPS", 5)
    in_parts = judge(tmp_path, RULES, ttls, None, progress=told).to_json()
    assert {"api (instances): merging journals", "login (clients): merging journals"} <= set(heard)
    assert any(stage.startswith("api (clients): judging") for stage in heard)
    assert json.dumps(in_parts, sort_keys=True) == json.dumps(whole, sort_keys=True)
    assert (tmp_path / "history" / "api.history.jsonl").read_bytes() == kept
    # each identity is larger than a part: judged as a stream where its policy allows (here,
    # in this process, to count them), its admissions handed to the promises' check
    streamed: list[str] = []
    finish = Streamed.finish

    def counted(self: Streamed) -> Found:
        found = finish(self)
        streamed.append(self.key)
        return found

    monkeypatch.setattr(Streamed, "finish", counted)
    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    here = judge(tmp_path, RULES, ttls, None).to_json()
    assert json.dumps(here, sort_keys=True) == json.dumps(whole, sort_keys=True)
    assert len(set(streamed)) == 12  # every identity, of login and api (fixed windows)


@pytest.mark.parametrize("block", [1, 5, 64, 1 << 20])
def test_a_journals_invokes_are_counted_a_block_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block: int
) -> None:
    path = tmp_path / "app-0.jsonl"
    records = [
        '{"event": "invoke", "op": 0, "process": "p", "key": "k", "time": 1.0}',
        '{"event": "complete", "op": 0, "time": 2.0, "outcome": "allowed"}',
        '{"event": "invoke", "op": 1, "process": "p", "key": "k", "time": 3.0}',
    ]
    path.write_text("\n".join(records) + '\n{"event": "invoke", "op": 2, "pro')  # cut short
    monkeypatch.setattr(journals, "BLOCK_BYTES", block)
    assert invokes(path) == 2


def test_a_full_disk_while_merging_is_said_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a_run(tmp_path)

    def no_room(*_: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(merge, "RUN_OPS", 50)
    monkeypatch.setattr(merge._Runs, "spill", no_room)
    with pytest.raises(OutputError, match=r"cannot write .*history: No space left on device"):
        judge(tmp_path, RULES, {}, None)
