"""The live verdict: the app instances' journals judged while the swarm runs (a service of the
user's own keeps none: then the clients' journals, which are its decisions as the judge sees
them too).

``python -m harness.load.live RUN_DIR`` runs beside the instances, in its own process (judging
is CPU work that would stall Locust's gevent loop, and with it the users and their latencies),
and rewrites ``RUN_DIR/live.json`` (the rows, atomically) after every round. Every ``interval``
seconds it reads what the journals gained (new files too), pairs invokes with completions, and
re-judges each identity that saw new operations (or new promises of ``X-RateLimit-Remaining``,
``RUN_DIR/promises``) with the same checkers as the final verdict, over that identity's whole
history so far (its operations still in flight count as ``unknown``). A check that takes long
stretches the interval (to twice its time), so judging never starves the load. The counts are
exact for what was journalled; the final verdict, after the run, also sees the keys left in
Redis.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.checkers import check
from harness.checkers.allowance import allowance
from harness.history import Operation, Outcome
from harness.history.errors import InvalidRecord
from harness.history.journal import Completed, event_from_record
from harness.load.promises import Promise, broken_promises
from harness.load.rules import Rule, Rules, rules_from_json

KINDS = ("over-admission", "wrongful-rejection")


@dataclass
class KeyState:
    """One identity under one rule: its operations and what its last judgement found."""

    done: list[Operation] = field(default_factory=list)
    found: dict[str, int] = field(default_factory=dict)
    witness: dict[str, str] = field(default_factory=dict)
    allowed_by_policy: float = 0.0
    promises: list[Promise] = field(default_factory=list)  # what its clients were told remain
    broken: int = 0  # promises its history proves could not be kept


@dataclass
class RuleState:
    rule: Rule
    keys: dict[str, KeyState] = field(default_factory=lambda: defaultdict(KeyState))
    in_flight: dict[tuple[str, int], tuple[str, str, float]] = field(default_factory=dict)
    changed: set[str] = field(default_factory=set)


class JournalTail:
    """The complete lines a growing file gained since the last read."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.partial = b""

    def lines(self) -> list[bytes]:
        with self.path.open("rb") as file:
            file.seek(self.offset)
            data = file.read()
        self.offset += len(data)
        *whole, self.partial = (self.partial + data).split(b"\n")
        return whole


class LiveJudge:
    def __init__(self, run_dir: str | Path, rules: Rules, interval: float = 2.0) -> None:
        side = "client" if rules.served else "server"
        self.root = Path(run_dir) / "journals" / side
        self.promises = Path(run_dir) / "promises"
        self.rules = {rule.name: RuleState(rule) for rule in rules.all}
        self.interval = interval
        self.tails: dict[Path, JournalTail] = {}

    def run(self, out: Path) -> None:
        """Judge and write ``out`` every round, until killed."""
        while True:
            began = time.monotonic()
            self.update()
            partial = out.with_suffix(".partial")
            partial.write_text(json.dumps({"time": time.time(), "rules": self.rows()}))
            os.replace(partial, out)
            time.sleep(max(self.interval, 2 * (time.monotonic() - began)))

    def update(self) -> None:
        """Read what is new, then judge every identity that changed."""
        for name, state in self.rules.items():
            for path in sorted((self.root / name).glob("*.jsonl")):
                tail = self.tails.setdefault(path, JournalTail(path))
                self._read(state, path, tail.lines())
            for path in sorted((self.promises / name).glob("*.jsonl")):
                tail = self.tails.setdefault(path, JournalTail(path))
                self._read_promises(state, tail.lines())
            for key in state.changed:
                self._judge(state, key)
            state.changed.clear()

    def _read(self, state: RuleState, path: Path, lines: list[bytes]) -> None:
        for line in lines:
            try:
                event = event_from_record(json.loads(line))
            except (ValueError, InvalidRecord):
                continue  # the final merge reports a bad line with its number
            if isinstance(event, Completed):
                begun = state.in_flight.pop((path.name, event.op), None)
                if begun is not None:
                    process, key, invoked = begun
                    op = Operation(process, key, invoked, event.time, event.outcome, event.now)
                    state.keys[key].done.append(op)
                    state.changed.add(key)
            else:
                state.in_flight[(path.name, event.op)] = (event.process, event.key, event.time)
                state.changed.add(event.key)

    def _read_promises(self, state: RuleState, lines: list[bytes]) -> None:
        for line in lines:
            try:
                promise = Promise(**json.loads(line))
            except (ValueError, TypeError):
                continue
            state.keys[promise.key].promises.append(promise)
            state.changed.add(promise.key)

    def _judge(self, state: RuleState, key: str) -> None:
        entry = state.keys[key]
        pending = [
            Operation(process, k, invoked, None, Outcome.UNKNOWN)
            for process, k, invoked in state.in_flight.values()
            if k == key
        ]
        history = sorted(entry.done + pending, key=lambda op: op.invoke)
        policy = state.rule.judge_policy
        verdict = check(history, policy)
        entry.found = {v.kind: v.count for v in verdict.violations if v.kind in KINDS}
        entry.witness = {v.kind: v.witnesses[0].detail for v in verdict.violations if v.witnesses}
        entry.broken = len(broken_promises(entry.promises, history, state.rule.parsed_policy))
        ends = [op.complete for op in history if op.complete is not None]
        if ends:
            entry.allowed_by_policy = allowance(policy, history[0].invoke, max(ends))

    def rows(self) -> list[dict[str, Any]]:
        """Per rule: operations, outcomes, what the policy allows, violations by kind."""
        return [self._row(state) for state in self.rules.values()]

    def _row(self, state: RuleState) -> dict[str, Any]:
        keys = state.keys.values()
        outcomes: dict[str, int] = defaultdict(int)
        for entry in keys:
            for op in entry.done:
                outcomes[op.outcome] += 1
        found = {kind: sum(e.found.get(kind, 0) for e in keys) for kind in KINDS}
        witness = next((w for e in keys for w in e.witness.values()), "")
        return {
            "rule": state.rule.name,
            "limiter": state.rule.limiter,
            "policy": state.rule.policy
            + (f" judged by {state.rule.judged_by}" if state.rule.judged_by else ""),
            "identities": len(state.keys),
            "decisions": sum(outcomes.values()),
            "in_flight": len(state.in_flight),
            "admitted": outcomes[Outcome.ALLOWED],
            "rejected": outcomes[Outcome.REJECTED],
            "unknown": outcomes[Outcome.UNKNOWN],
            "policy_allows": int(sum(e.allowed_by_policy for e in keys)),
            **found,
            "broken_promises": sum(e.broken for e in keys),
            "witness": witness,
        }


if __name__ == "__main__":
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("run_dir", type=Path)
    options.add_argument("--interval", type=float, default=2.0, help="seconds between rounds")
    arguments = options.parse_args()
    rules = rules_from_json((arguments.run_dir / "rules.json").read_text())
    LiveJudge(arguments.run_dir, rules, arguments.interval).run(arguments.run_dir / "live.json")
