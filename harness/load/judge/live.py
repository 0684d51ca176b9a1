"""The live verdict: the app instances' journals judged while the swarm runs (a service of the
user's own keeps none: then the clients' journals, which are its decisions as the judge sees
them too).

``python -m ratelimit_harness.harness.load.judge.live RUN_DIR`` runs beside the instances, in its
own process (judging is CPU work that would stall Locust's gevent loop, and with it the users and
their latencies), and rewrites ``RUN_DIR/live.json`` (the rows, atomically) after every round. Every
``interval`` seconds it reads what the journals gained (new files too) and judges, with the same
checkers as the final verdict, each identity's history up to the rule's *horizon*: the instant
before which every journal of the rule is known complete. The journals lag each other (each process
writes its own, the judge reads them one after another), so a history read as far as each file goes
would hold one instance's rejection without another's earlier admission that explains it, and count
a wrongful rejection the next round takes back. Each journal is written in time order (a process
stamps and writes each record in one step, on one thread), so it is complete up to the last instant
it holds; one gone quiet is complete up to ``settle`` seconds (``SETTLE``) before the round began,
the time a record takes at most to reach its file (only a process stopped for longer between
stamping a record and writing it escapes this). The clients' journals are the exception: a
Locust process writes its completions by the batch (``harness.load.traffic.answers``), a few
hundredths of a second after invokes stamped later. Until its completion comes, an operation is in
flight, which only widens what the checkers allow. The horizon is the earliest of these; behind it
the judge sees what the final verdict sees, and judges it by the final verdict's rules: an operation
invoked before the horizon and not completed before it is in flight, ``unknown`` (as a killed
instance's are), a promise of ``X-RateLimit-Remaining`` is judged once, when its answer came
before the horizon (all it can be held to is known by then), and the outbound rule's accepted
calls count by their arrival at the SMS provider (``RUN_DIR/provider.jsonl``, complete up to
``settle`` before the round: its threads stamp and write apart). Deciding an operation only
ever narrows what the checkers allow, so a count stands: the final verdict finds at least as
many of each kind. A check that takes long stretches the interval (to twice its time), and
the judge runs only when a core would be idle otherwise (Linux's ``SCHED_IDLE``), so judging
never starves the load: it cost a no-wait swarm on two cores 15 % of its requests before.
"""

from __future__ import annotations

import argparse
import contextlib
import heapq
import json
import math
import os
import re
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ratelimit_harness.harness.checkers import check
from ratelimit_harness.harness.checkers.shared.allowance import allowance, per_span
from ratelimit_harness.harness.checkers.view.timeline import decided_by
from ratelimit_harness.harness.history import Operation, Outcome
from ratelimit_harness.harness.history.errors import InvalidRecord
from ratelimit_harness.harness.history.journal import Completed, GivenBack, event_from_record
from ratelimit_harness.harness.history.jsonl import operation_from_record
from ratelimit_harness.harness.history.loads import OUTBOUND
from ratelimit_harness.harness.load.contract.journals import JournalTail
from ratelimit_harness.harness.load.contract.rules import NEVER, Rule, Rules, rules_from_json
from ratelimit_harness.harness.load.judge.final import unjudged_kinds
from ratelimit_harness.harness.load.judge.promises import Promise, broken_promises

KINDS = ("over-admission", "wrongful-rejection")
SETTLE = 1.0  # seconds a record takes at most from its stamp to its journal
CHART_SPANS = 60  # spans of the policy each rule's chart shows, the latest
CHART_WITNESSES = 20  # witness spans each identity keeps for the chart
EPOCH = re.compile(r"\b1[5-9]\d{8}(\.\d+)?\b")  # an instant in epoch seconds (2017 to 2033)


@dataclass
class Seen:
    """One operation as far as it was read: its completion once that was."""

    order: tuple[str, int]  # ties on invoke go as the final merge puts them: by file, then op
    process: str
    key: str
    invoke: float
    complete: float | None = None
    outcome: Outcome = Outcome.UNKNOWN
    now: float | None = None
    admitted_elsewhere: bool = False  # an admission the SMS provider's record counts instead
    cost: int = 1
    refund: tuple[float, float | None] | None = None  # its give-back, as far as it was read

    def as_of(self, horizon: float) -> Operation | None:
        """The operation as it stood at ``horizon`` (in flight if not completed before it);
        None when its admission counts from elsewhere."""
        if self.complete is None or self.complete >= horizon:
            unknown = Outcome.UNKNOWN
            return Operation(self.process, self.key, self.invoke, None, unknown, cost=self.cost)
        if self.admitted_elsewhere and self.outcome is Outcome.ALLOWED:
            return None
        ended = (self.complete, self.outcome, self.now)
        refund = None
        if self.refund is not None and self.refund[0] < horizon:  # begun: answered by then?
            answered = self.refund[1] is not None and self.refund[1] < horizon
            refund = (self.refund[0], self.refund[1] if answered else None)
        return Operation(self.process, self.key, self.invoke, *ended, cost=self.cost, refund=refund)


@dataclass
class KeyState:
    """One identity under one rule: what was read of it, and its last judgement."""

    seen: list[Seen] = field(default_factory=list)
    promises: list[Promise] = field(default_factory=list)  # told remain; not yet judged
    judged: list[Operation] = field(default_factory=list)  # its history up to the horizon
    found: dict[str, int] = field(default_factory=dict)
    witness: dict[str, str] = field(default_factory=dict)
    spans: list[tuple[float, float]] = field(default_factory=list)  # its witnesses' (a few)
    admitted: int = 0  # in ``judged``
    allowed_by_policy: float = 0.0
    broken: int = 0  # promises judged so far that its history proves could not be kept


@dataclass
class RuleState:
    rule: Rule
    keys: dict[str, KeyState] = field(default_factory=lambda: defaultdict(KeyState))
    in_flight: dict[tuple[str, int], Seen] = field(default_factory=dict)  # by (journal, op)
    admitted: dict[tuple[str, int], Seen] = field(default_factory=dict)  # to give back, if any
    stamped: dict[Path, float] = field(default_factory=dict)  # each journal's latest instant
    decided: int = 0  # completions read, behind the horizon or not
    ahead: list[tuple[float, str]] = field(default_factory=list)  # (instant, key), a heap
    horizon: float = -math.inf


class LiveJudge:
    def __init__(
        self,
        run_dir: str | Path,
        rules: Rules,
        interval: float = 2.0,
        *,
        clock: Callable[[], float] = time.time,
        settle: float = SETTLE,
    ) -> None:
        side = rules.decided_on
        self.root = Path(run_dir) / "journals" / side
        self.promises = Path(run_dir) / "promises"
        self.arrivals = None if rules.served else Path(run_dir) / "provider.jsonl"
        self.rules = {rule.name: RuleState(rule) for rule in rules.all}
        self.unjudged = unjudged_kinds(Path(run_dir))  # the final verdict's, by the same rule
        self.interval = interval
        self.clock = clock
        self.settle = settle
        self.tails: dict[Path, JournalTail] = {}
        self.started = math.inf  # the first request's invoke: the run's time 0

    def run(self, out: Path) -> None:
        """Judge and write ``out`` every round, until killed."""
        while True:
            began = time.monotonic()
            self.update()
            partial = out.with_suffix(".partial")
            started = self.started if math.isfinite(self.started) else None
            rows = {"time": time.time(), "started": started, "rules": self.rows()}
            partial.write_text(json.dumps(rows))
            os.replace(partial, out)
            time.sleep(max(self.interval, 2 * (time.monotonic() - began)))

    def update(self) -> None:
        """Read what is new, move each rule's horizon, judge every identity it reached anew."""
        for name, state in self.rules.items():
            settled = self.clock() - self.settle  # taken before any file is looked for
            journals = sorted((self.root / name).glob("*.jsonl"))
            for path in journals:
                self._read(state, path, self._tail(path).lines())
            for path in sorted((self.promises / name).glob("*.jsonl")):
                self._read_promises(state, self._tail(path).lines())
            known = [max(state.stamped.get(path, -math.inf), settled) for path in journals]
            if name == OUTBOUND and self.arrivals is not None:
                known.append(settled)
                if self.arrivals.exists():
                    self._read_arrivals(state, self._tail(self.arrivals).lines())
            state.horizon = min(known, default=settled)
            changed = set()
            while state.ahead and state.ahead[0][0] < state.horizon:
                changed.add(heapq.heappop(state.ahead)[1])
            for key in changed:
                self._judge(state, key)

    def _tail(self, path: Path) -> JournalTail:
        return self.tails.setdefault(path, JournalTail(path))

    def _read(self, state: RuleState, path: Path, lines: list[bytes]) -> None:
        for line in lines:
            try:
                event = event_from_record(json.loads(line))
            except (ValueError, InvalidRecord):
                continue  # the final merge reports a bad line with its number
            state.stamped[path] = max(state.stamped.get(path, -math.inf), event.time)
            if isinstance(event, Completed):
                seen = state.in_flight.pop((path.name, event.op), None)
                if seen is not None:
                    seen.complete, seen.outcome, seen.now = event.time, event.outcome, event.now
                    state.decided += 1
                    heapq.heappush(state.ahead, (event.time, seen.key))
                    if state.rule.refund != NEVER and event.outcome is Outcome.ALLOWED:
                        state.admitted[(path.name, event.op)] = seen
            elif isinstance(event, GivenBack):
                seen = state.admitted.get((path.name, event.op))
                if seen is not None:
                    seen.refund = event.onto(seen.refund)
                    heapq.heappush(state.ahead, (event.time, seen.key))
            else:
                self.started = min(self.started, event.time)
                seen = Seen((path.name, event.op), event.process, event.key, event.time)
                seen.cost = event.cost
                seen.admitted_elsewhere = state.rule.name == OUTBOUND and self.arrivals is not None
                state.in_flight[(path.name, event.op)] = seen
                state.keys[event.key].seen.append(seen)
                heapq.heappush(state.ahead, (event.time, event.key))

    def _read_promises(self, state: RuleState, lines: list[bytes]) -> None:
        for line in lines:
            try:
                promise = Promise(**json.loads(line))
            except (ValueError, TypeError):
                continue
            state.keys[promise.key].promises.append(promise)
            heapq.heappush(state.ahead, (promise.complete, promise.key))

    def _read_arrivals(self, state: RuleState, lines: list[bytes]) -> None:
        """The SMS provider's record: each accepted call, from its departure to its arrival."""
        for line in lines:
            try:
                op = operation_from_record(json.loads(line))
            except (ValueError, InvalidRecord):
                continue
            entry = state.keys[op.key]
            order = ("", len(entry.seen))  # the final verdict lists departures first
            seen = Seen(order, op.process, op.key, op.invoke, op.complete, op.outcome, op.now)
            entry.seen.append(seen)
            heapq.heappush(state.ahead, (op.invoke, op.key))  # in flight from here
            if op.complete is not None:
                heapq.heappush(state.ahead, (op.complete, op.key))  # decided from here

    def _judge(self, state: RuleState, key: str) -> None:
        entry, horizon = state.keys[key], state.horizon
        before = sorted((s for s in entry.seen if s.invoke < horizon), key=_merge_order)
        history = [op for op in (s.as_of(horizon) for s in before) if op is not None]
        policy = state.rule.judge_policy
        verdict = check(history, policy, unjudged=self.unjudged.get(state.rule.name))
        entry.judged = history
        entry.found = {v.kind: v.count for v in verdict.violations if v.kind in KINDS}
        entry.witness = {v.kind: v.witnesses[0].detail for v in verdict.violations if v.witnesses}
        found = [w.span for v in verdict.violations if v.kind in KINDS for w in v.witnesses]
        entry.spans = found[:CHART_WITNESSES]
        entry.admitted = sum(op.outcome is Outcome.ALLOWED for op in history)
        answered = [p for p in entry.promises if p.complete < horizon]
        if answered:
            entry.promises = [p for p in entry.promises if p.complete >= horizon]
            entry.broken += len(broken_promises(answered, history, state.rule.parsed_policy))
        ends = [op.complete for op in history if op.complete is not None]
        if ends:
            entry.allowed_by_policy = allowance(policy, history[0].invoke, max(ends))

    def rows(self) -> list[dict[str, Any]]:
        """Per rule: the decisions read, then outcomes, what the policy allows and violations by
        kind as they stand on the horizon (epoch seconds; null before any journal was read).
        The decisions are facts once read; the rest waits for the horizon."""
        return [self._row(state) for state in self.rules.values()]

    def _row(self, state: RuleState) -> dict[str, Any]:
        keys = [entry for entry in state.keys.values() if entry.judged]
        outcomes: dict[str, int] = defaultdict(int)
        in_flight = 0
        for entry in keys:
            for op in entry.judged:
                if op.complete is None:
                    in_flight += 1
                else:
                    outcomes[op.outcome] += 1
        unjudged = self.unjudged.get(state.rule.name, {})
        found = {  # None: not judged (the final verdict says why)
            kind: None if kind in unjudged else sum(e.found.get(kind, 0) for e in keys)
            for kind in KINDS
        }
        witness = since_start(next((w for e in keys for w in e.witness.values()), ""), self.started)
        return {
            "rule": state.rule.name,
            "limiter": state.rule.limiter,
            "policy": state.rule.policy
            + (f" judged by {state.rule.judged_by}" if state.rule.judged_by else ""),
            "identities": len(keys),
            "decisions": state.decided,
            "in_flight": in_flight,
            "admitted": outcomes[Outcome.ALLOWED],
            "rejected": outcomes[Outcome.REJECTED],
            "unknown": outcomes[Outcome.UNKNOWN],
            "policy_allows": int(sum(e.allowed_by_policy for e in keys)),
            **found,
            "broken_promises": sum(e.broken for e in keys),
            "witness": witness,
            "horizon": state.horizon if state.stamped else None,
            "chart": self._chart(state),
        }

    def _chart(self, state: RuleState) -> dict[str, Any] | None:
        """One identity's admissions per span of the policy, the latest ``CHART_SPANS`` up to
        the horizon, beside the most the policy allows in one, and where its witnesses lie
        (seconds since the run began): the identity of the first witness, else the one
        admitted most. None when nothing was judged, or no span of fixed length bounds the
        policy (``per_span``)."""
        allows = per_span(state.rule.judge_policy)
        judged = {key: entry for key, entry in state.keys.items() if entry.judged}
        if allows is None or not judged or not math.isfinite(state.horizon):
            return None
        key = next((k for k, e in judged.items() if e.spans), None)
        key = key or max(judged, key=lambda k: judged[k].admitted)
        admitted = [decided_by(op) for op in judged[key].judged if op.outcome is Outcome.ALLOWED]
        origin = 0.0 if allows.aligned else self.started  # aligned spans start at the epoch
        last = math.floor((state.horizon - origin) / allows.span)
        counts = Counter(math.floor((t - origin) / allows.span) for t in admitted)
        spans = range(max(min(counts, default=last), last - CHART_SPANS + 1), last + 1)
        return {
            "key": key,
            "span": allows.span,
            "most": allows.most,
            "aligned": allows.aligned,
            "counts": [[origin + n * allows.span - self.started, counts[n]] for n in spans],
            "witnesses": [[a - self.started, b - self.started] for a, b in judged[key].spans],
        }


def since_start(text: str, started: float) -> str:
    """``text`` with each instant in epoch seconds given as seconds since ``started`` (with as
    many decimals), as the live view shows a witness."""
    if not math.isfinite(started):
        return text

    def relative(instant: re.Match[str]) -> str:
        decimals = len(instant[1]) - 1 if instant[1] else 0
        return f"{float(instant[0]) - started:.{decimals}f}"

    return EPOCH.sub(relative, text)


def _merge_order(seen: Seen) -> tuple[float, tuple[str, int]]:
    return seen.invoke, seen.order


if __name__ == "__main__":
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("run_dir", type=Path)
    options.add_argument("--interval", type=float, default=2.0, help="seconds between rounds")
    arguments = options.parse_args()
    with contextlib.suppress(AttributeError, OSError):  # Linux: run only on an idle core
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    rules = rules_from_json((arguments.run_dir / "rules.json").read_text())
    LiveJudge(arguments.run_dir, rules, arguments.interval).run(arguments.run_dir / "live.json")
