"""The verdict of a load run, from its run directory alone.

Per rule, two histories go through the same checkers as every other history: what the app
instances decided (their journals merged; a killed instance's requests in flight are
``unknown``), with the keys the run left in Redis; and what the clients saw (Locust's journals;
an answer that is neither 200 nor 429 is ``unknown``). The outbound rule is judged from the SMS
provider's record of arrivals (each call's departure) and the instances' refusals. Header lies
come from the clients (``client.json``), and the promises of ``X-RateLimit-Remaining`` are
held against the instances' history (``harness.load.promises``). Each merged history is kept
in ``RUN_DIR/history`` so ``ratelimit-harness check`` can judge it again.

A service of the user's own (``harness.load.service``) keeps no journal: what its clients saw
is its decisions, judged once, with the keys it left.

Keys of a rule already in Redis as the run starts (``KEYS_BEFORE``: an earlier run's, or another
program's) hold counts the judge never saw: a rejection they caused would look wrongful, so the
rule's rejections are not judged (the verdict says why), and a key that was already without a
TTL is not this run's immortal key.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from ratelimit_harness.harness.checkers import check
from ratelimit_harness.harness.errors import HarnessError
from ratelimit_harness.harness.history import Operation, Outcome, read_history, write_history
from ratelimit_harness.harness.history.loads import OUTBOUND, LoadRecord, RuleRecord
from ratelimit_harness.harness.history.merge import merge_journals
from ratelimit_harness.harness.load.fault_effects import effects, read_faults
from ratelimit_harness.harness.load.journals import first_error, invokes, journal_paths
from ratelimit_harness.harness.load.promises import broken_promises, read_promises
from ratelimit_harness.harness.load.rules import Rule, Rules, rules_from_json
from ratelimit_harness.harness.rundir import keep_judged

KEYS_BEFORE = "keys-before.json"  # {rule: {key: TTL in s, -1 none}}, as the run started


class UnjudgedRunError(HarnessError):
    """A run directory that holds too little to be judged: says what is missing."""


def judge(
    run_dir: Path,
    rules: Rules,
    ttls: dict[str, dict[str, float]],
    seconds: float | None,
    served_by: str = "",
) -> LoadRecord:
    """Judge every rule that saw traffic; ``ttls`` holds each rule's keys left in Redis;
    ``seconds``: how long the run lasted (None: from its first request to its last answer,
    the first kept as ``setup["started"]``); ``served_by`` names the service of the user's own
    that enforced ``rules``, if one did."""
    seen = _client_view(run_dir)
    history_dir = run_dir / "history"
    history_dir.mkdir(exist_ok=True)
    faults = read_faults(run_dir)
    before = _keys_before(run_dir)
    cannot = _unjudged(before)
    verdicts = []
    first, last = math.inf, -math.inf
    for rule in rules.all:
        client = merge_journals(journal_paths(run_dir, "client", rule.name))
        server = client if rules.served else _server_history(run_dir, rule)
        if not server and not client:
            continue
        for op in client if rules.served else (*client, *server):  # served: one history
            first, last = min(first, op.invoke), max(last, op.complete or op.invoke)
        write_history(history_dir / f"{rule.name}.client.jsonl", client)
        policy = rule.judge_policy
        there, unjudged = before.get(rule.name, {}), cannot.get(rule.name)
        left = ttls.get(rule.name)
        if left is not None:  # a key immortal before the run is not the run's immortal key
            left = {key: ttl for key, ttl in left.items() if there.get(key) != -1}
        server_verdict = check(server, policy, left, unjudged=unjudged)
        client_verdict = (
            server_verdict if rules.served else check(client, policy, unjudged=unjudged)
        )
        keep_judged(
            run_dir,
            f"history/{rule.name}",
            policy=policy,
            history=server,
            ttls=left,
            verdict=server_verdict,
        )
        lies = dict(seen["lies"].get(rule.name, {}))
        examples = dict(seen["examples"].get(rule.name, {}))
        broken = broken_promises(read_promises(run_dir, rule.name), server, rule.parsed_policy)
        if broken:
            lies["remaining-broken-promise"] = len(broken)
            examples["remaining-broken-promise"] = f"{broken[0].key}: {broken[0].detail}"
        over = [w for v in server_verdict.of_kind("over-admission") for w in v.witnesses]
        found = effects(client or server, server, faults, rule.on_error, over=over, broken=broken)
        for fault, effect in zip(faults, found, strict=True):
            fault.effects[rule.name] = effect
        verdicts.append(
            RuleRecord(
                rule.name,
                rule.path,
                served_by if rules.served and served_by else rule.limiter,
                rule.policy,
                str(policy),
                server_verdict,
                client_verdict,
                lies,
                examples,
                seen["latency_ms"].get(rule.name, {}),
                seen["outcomes"].get(rule.name, {}),
                first_error(run_dir, rule.name),
                served=rules.served,
                sent=sum(invokes(path) for path in journal_paths(run_dir, "client", rule.name)),
            )
        )
    if seconds is not None:
        return LoadRecord(verdicts, seconds, faults=faults)
    spanned = last > first
    started = {"started": first} if spanned else {}
    return LoadRecord(verdicts, last - first if spanned else 0.0, started, faults)


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


def _server_history(run_dir: Path, rule: Rule) -> list[Operation]:
    decided = merge_journals(journal_paths(run_dir, "server", rule.name))
    if rule.name != OUTBOUND:
        return decided
    # an accepted call counts by its arrival at the provider (its departure), not its acceptance
    arrivals = run_dir / "provider.jsonl"
    departed = read_history(arrivals) if arrivals.exists() else []
    refused = [op for op in decided if op.outcome is not Outcome.ALLOWED]
    return sorted(departed + refused, key=lambda op: op.invoke)


def _client_view(run_dir: Path) -> dict[str, Any]:
    path = run_dir / "client.json"
    empty: dict[str, Any] = {"lies": {}, "examples": {}, "latency_ms": {}, "outcomes": {}}
    return empty | json.loads(path.read_text()) if path.exists() else empty
