"""The verdict of a load run, from its run directory alone.

Per rule, two histories go through the same checkers as every other history: what the app
instances decided (their journals merged; a killed instance's requests in flight are
``unknown``), with the keys the run left in Redis; and what the clients saw (Locust's journals;
an answer that is neither 200 nor 429 is ``unknown``). The outbound rule is judged from the SMS
provider's record of arrivals (each call's departure) and the instances' refusals. Header lies
come from the clients (``client.json``), and the promises of ``X-RateLimit-Remaining`` are
held against the instances' history (``harness.load.judge.promises``). Each merged history is kept
in ``RUN_DIR/history`` so ``ratelimit-harness check`` can judge it again.

A service of the user's own (``harness.load.system.service``) keeps no journal: what its clients saw
is its decisions, judged once, with the keys it left.

Keys of a rule already in Redis as the run starts (``KEYS_BEFORE``: an earlier run's, or another
program's) hold counts the judge never saw: a rejection they caused would look wrongful, so the
rule's rejections are not judged (the verdict says why), and a key that was already without a
TTL is not this run's immortal key.
"""

from __future__ import annotations

import functools
import json
import math
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ratelimit_harness.harness.checkers import partitions
from ratelimit_harness.harness.checkers.partitions import Progress, check_file, judge_file
from ratelimit_harness.harness.errors import HarnessError, writing
from ratelimit_harness.harness.history import Outcome, read_history, write_history
from ratelimit_harness.harness.history.loads import OUTBOUND, FaultRecord, LoadRecord, RuleRecord
from ratelimit_harness.harness.history.merge import Merged, merge_into_history, merge_journals
from ratelimit_harness.harness.load.contract.journals import first_error, invokes, journal_paths
from ratelimit_harness.harness.load.contract.rules import Rule, Rules, rules_from_json
from ratelimit_harness.harness.load.faults.effects import Seen, effects, fault_spans, read_faults
from ratelimit_harness.harness.load.judge.promises import (
    BrokenPromises,
    PromiseCheck,
    promise_paths,
)
from ratelimit_harness.harness.rundir import HISTORY, keep_judged

KEYS_BEFORE = "keys-before.json"  # {rule: {key: TTL in s, -1 none}}, as the run started


class UnjudgedRunError(HarnessError):
    """A run directory that holds too little to be judged: says what is missing."""


def judge(
    run_dir: Path,
    rules: Rules,
    ttls: dict[str, dict[str, float]],
    seconds: float | None,
    served_by: str = "",
    *,
    progress: Progress | None = None,
) -> LoadRecord:
    """Judge every rule that saw traffic; ``ttls`` holds each rule's keys left in Redis;
    ``seconds``: how long the run lasted (None: from its first request to its last answer,
    the first kept as ``setup["started"]``); ``served_by`` names the service of the user's own
    that enforced ``rules``, if one did. Each history is merged to its file and judged from
    there, in parts when it is large: memory does not grow with the run. ``progress``, when
    given, hears each stage of judging a rule whose journals are larger than a part."""
    (run_dir / "history").mkdir(exist_ok=True)
    faults = read_faults(run_dir)
    before = _keys_before(run_dir)
    seen = _client_view(run_dir)
    verdicts = []
    first, last = math.inf, -math.inf
    for rule in rules.all:
        with tempfile.TemporaryDirectory(prefix="ratelimit-harness-judge-") as scratch:
            one = _Rule(run_dir, rules, rule, Path(scratch), faults, before, progress)
            judged = one.judged(ttls)
        if judged is None:
            continue
        record, spans = judged
        for merged in spans:
            first, last = min(first, merged.first), max(last, merged.last)
        record.header_lies = seen["lies"].get(rule.name, {}) | record.header_lies
        examples = seen["examples"].get(rule.name, {})
        record.header_lie_examples = examples | record.header_lie_examples
        record.latency_ms = seen["latency_ms"].get(rule.name, {})
        record.client_outcomes = seen["outcomes"].get(rule.name, {})
        if rules.served and served_by:
            record.limiter = served_by
        verdicts.append(record)
    if seconds is not None:
        return LoadRecord(verdicts, seconds, faults=faults)
    spanned = last > first
    started = {"started": first} if spanned else {}
    return LoadRecord(verdicts, last - first if spanned else 0.0, started, faults)


@dataclass
class _Rule:
    """One rule of a run, judged: its histories merged to ``RUN_DIR/history``, judged from
    there, its promises beside the instances' history, its faults' effects filled in."""

    run_dir: Path
    rules: Rules
    rule: Rule
    scratch: Path  # removed once the rule is judged
    faults: list[FaultRecord]
    before: dict[str, dict[str, float]]  # ``KEYS_BEFORE``
    progress: Progress | None = None

    @property
    def stem(self) -> str:
        return f"history/{self.rule.name}"

    def judged(self, ttls: dict[str, dict[str, float]]) -> tuple[RuleRecord, list[Merged]] | None:
        """The rule's record and its histories' spans; None if it saw no traffic."""
        run_dir, rule, served = self.run_dir, self.rule, self.rules.served
        client_file = run_dir / f"{self.stem}.client.jsonl"
        server_file = run_dir / f"{self.stem}{HISTORY}"
        client, server = self._merged(client_file, server_file)
        if not server.count and not client.count:
            for path in (client_file, server_file):
                path.unlink(missing_ok=True)
            return None
        there = self.before.get(rule.name, {})
        unjudged = _unjudged({rule.name: there} if there else {}).get(rule.name)
        left = ttls.get(rule.name)
        if left is not None:  # a key immortal before the run is not the run's immortal key
            left = {key: ttl for key, ttl in left.items() if there.get(key) != -1}
        with writing(self.scratch):
            seen = Seen.of_file(client_file if client.count else server_file, self.scratch)
        spans = fault_spans(seen, self.faults)
        policy = rule.judge_policy
        promises = PromiseCheck(promise_paths(run_dir, rule.name), rule.parsed_policy, spans)
        server_verdict, found = judge_file(
            server_file,
            policy,
            left,
            unjudged=unjudged,
            beside=promises,
            progress=self._told("clients" if served else "instances"),
        )
        client_verdict = server_verdict
        if not served:
            told = self._told("clients")
            client_verdict = check_file(client_file, policy, unjudged=unjudged, progress=told)
        keep_judged(run_dir, self.stem, policy=policy, ttls=left, verdict=server_verdict)
        broken = BrokenPromises.joined(found, len(spans))
        lies, examples = {}, {}
        if broken.first:
            lies["remaining-broken-promise"] = broken.count
            examples["remaining-broken-promise"] = (
                f"{broken.first[1].key}: {broken.first[1].detail}"
            )
        over = [w for v in server_verdict.of_kind("over-admission") for w in v.witnesses]
        found_effects = effects(
            seen, server.unfinished, self.faults, rule.on_error, over=over, broken=broken.per_span
        )
        for fault, effect in zip(self.faults, found_effects, strict=True):
            fault.effects[rule.name] = effect
        record = RuleRecord(
            rule.name,
            rule.path,
            rule.limiter,
            rule.policy,
            str(policy),
            server_verdict,
            client_verdict,
            lies,
            examples,
            first_error=first_error(run_dir, rule.name),
            served=served,
            sent=sum(map(invokes, journal_paths(run_dir, "client", rule.name))),
        )
        return record, [client] if served else [client, server]

    def _merged(self, client_file: Path, server_file: Path) -> tuple[Merged, Merged]:
        """Each side's journals merged to its file (the clients' only, for a rule a service of
        the user's own enforced: both sides are theirs)."""
        journals = journal_paths(self.run_dir, "client", self.rule.name)
        # a full disk, here or under TMPDIR (the sorted runs), is said in one line
        with writing(client_file.parent):
            client = merge_into_history(journals, client_file, progress=self._told("clients"))
            if self.rules.served:
                shutil.copyfile(client_file, server_file)
                return client, client
            return client, self._merge_server(server_file)

    def _told(self, side: str) -> Progress | None:
        """What hears the stages of one side of the rule: none for a small one (the run's
        output stays as it was), a stage named after the rule and side for a large one."""
        told = self.progress
        if told is None or not self._large:
            return None
        return lambda stage, done, of: told(f"{self.rule.name} ({side}): {stage}", done, of)

    @functools.cached_property
    def _large(self) -> bool:
        """Whether the rule's journals are larger than a part."""
        journals = journal_paths(self.run_dir, "client", self.rule.name)
        journals += journal_paths(self.run_dir, "server", self.rule.name)
        return sum(p.stat().st_size for p in journals) > partitions.PART_BYTES

    def _merge_server(self, path: Path) -> Merged:
        """The instances' journals merged to ``path``. The outbound rule's accepted calls count
        by their arrival at the provider (their departure), not their acceptance: its history
        is the provider's arrivals and the instances' refusals (held in memory: the provider's
        rate bounds it)."""
        run_dir, rule = self.run_dir, self.rule
        decided = journal_paths(run_dir, "server", rule.name)
        if rule.name != OUTBOUND:
            return merge_into_history(decided, path, progress=self._told("instances"))
        arrivals = run_dir / "provider.jsonl"
        departed = read_history(arrivals) if arrivals.exists() else []
        refused = [op for op in merge_journals(decided) if op.outcome is not Outcome.ALLOWED]
        history = sorted(departed + refused, key=lambda op: op.invoke)
        write_history(path, history)
        merged = Merged()
        for op in history:
            merged.add(op)
        return merged


def judge_afterwards(run_dir: Path) -> LoadRecord:
    """The verdict of a load run whose harness died before it judged (killed, the machine
    rebooted): from its directory alone, as it would have been, but for the keys it left in
    Redis, which cannot be read now (said in the setup). Saved as the run's verdict."""
    try:
        rules = rules_from_json((run_dir / "rules.json").read_text())
    except (OSError, ValueError) as error:
        raise UnjudgedRunError(f"{run_dir}: cannot be judged: no rules ({error})") from None
    verdict = judge(run_dir, rules, {}, None)
    verdict.setup = {
        "judged_afterwards": True,
        "keys_unread": "the run's harness ended before it judged; its Redis was not read",
        "started": verdict.setup.get("started", 0.0),
    }
    verdict.write(run_dir)
    return verdict


def keep_keys_before(run_dir: Path, found: dict[str, dict[str, float]]) -> None:
    """Keep each rule's keys already in Redis as the run starts (``KEYS_BEFORE``)."""
    there = {rule: keys for rule, keys in found.items() if keys}
    (run_dir / KEYS_BEFORE).write_text(json.dumps(there, sort_keys=True))


def unjudged_kinds(run_dir: Path) -> dict[str, dict[str, str]]:
    """Per rule, the kinds of violation its verdicts cannot judge, and why (``KEYS_BEFORE``)."""
    return _unjudged(_keys_before(run_dir))


def _unjudged(before: dict[str, dict[str, float]]) -> dict[str, dict[str, str]]:
    return {
        rule: {
            "wrongful-rejection": f"{len(keys):,} of its keys were in Redis before the run "
            f"(such as {min(keys)}): what they had counted is unknown"
        }
        for rule, keys in before.items()
    }


def _keys_before(run_dir: Path) -> dict[str, dict[str, float]]:
    path = run_dir / KEYS_BEFORE
    return dict(json.loads(path.read_text())) if path.exists() else {}


def _client_view(run_dir: Path) -> dict[str, Any]:
    path = run_dir / "client.json"
    empty: dict[str, Any] = {"lies": {}, "examples": {}, "latency_ms": {}, "outcomes": {}}
    return empty | json.loads(path.read_text()) if path.exists() else empty
