"""The app's rate-limit rules: which requests each rule holds, with which limiter and policy.

A rules file is TOML, one ``[[rule]]`` table per rule and an optional ``[outbound]`` table for
the calls ``/send-otp`` makes to the SMS provider (Part 6's leaky bucket)::

    [[rule]]
    name = "login"                       # names the rule in headers, histories and reports
    path = "/login"                      # an exact path, or a prefix ending in '*'
    limiter = "fixed-window-lua"         # a catalogue name or module:attribute
    policy = "fixed-window:limit=5,window=900"
    # tier = "pro"                       # optional: only identities of this tier
    # judged_by = "sliding-window:limit=5,window=900"  # optional: judge by another policy
    # identity = "X-API-Key"             # optional: the header that carries the API key
    # keys = "rl:login:*"                # optional: its keys in Redis, for their TTLs afterwards
    # on_error = "closed"                # when its limiter fails: "closed" (503) or "open" (admit)
    # cost = "X-Cost"                    # optional: what a request costs: a whole number, or the
    #                                    # request header that carries it (1 when absent)
    # refund = "failed"                  # optional: give back a request the app failed (4xx, 5xx)

    [outbound]
    limiter = "leaky-bucket"
    policy = "leaky-bucket:rate=10,capacity=20"

A request is held by the first rule whose path and tier match it (file order); one that no rule
matches passes unlimited. ``judged_by`` judges a rule's decisions by another policy than the
one it enforces: a fixed window judged by the sliding window of the same limit shows the
boundary attack (Part 2). Each rule keeps its own keys, so one identity can be held by several
rules at once (its logins and its API calls). An API key beginning ``pro-`` is of the pro tier;
every other identity is of the free tier.

For a service of the user's own (``load --service`` or ``--target``:
``harness.load.system.service``) the service decides, so a rule names no limiter; ``keys``, a glob,
tells the judge which keys in Redis are the rule's (on a Redis the harness started, a lone rule's
keys are every key there).
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from ratelimit_harness.harness.errors import HarnessError
from ratelimit_harness.harness.history.loads import OUTBOUND
from ratelimit_harness.limiters import CATALOGUE, Policy, resolve

TIERS = ("free", "pro")
_FIELDS = (
    *("name", "path", "limiter", "policy", "tier", "judged_by", "identity", "keys", "on_error"),
    *("cost", "refund"),
)
ON_ERROR = ("closed", "open")
NEVER, FAILED = REFUND = ("never", "failed")  # which admitted requests a rule gives back
API_KEY_HEADER = "X-API-Key"
SERVICE = "service"  # the limiter of a rule that a service of the user's own enforces


def tier_of(api_key: str | None) -> str:
    """The tier of a caller: pro for an API key beginning ``pro-``, else free."""
    return "pro" if api_key and api_key.startswith("pro-") else "free"


class RulesError(HarnessError):
    """A rules file that cannot be read, or a rule that makes no sense; says which and why."""


@dataclass(frozen=True)
class Rule:
    name: str
    path: str
    limiter: str
    policy: str
    tier: str | None = None
    judged_by: str | None = None
    identity: str = API_KEY_HEADER  # the request header that carries the API key
    keys: str | None = None  # a glob of its keys in Redis; None: the harness's own naming
    on_error: str = ON_ERROR[0]  # when its limiter fails: refuse (503), or admit unchecked
    cost: str = "1"  # what a request costs: a whole number, or the header that carries it
    refund: str = NEVER  # "failed": give back a request the app answered with 400 or more

    def cost_of(self, header: Callable[[str], str | None]) -> int | None:
        """What a request costs, given how to read one of its headers (``header(name)``): the
        rule's number, or its header's (1 when the request has none); None when the header
        holds no whole number from 1."""
        if self.cost.isdigit():
            return int(self.cost)
        text = header(self.cost)
        if text is None:
            return 1
        text = text.strip()
        return int(text) if text.isdigit() and int(text) >= 1 else None

    def matches(self, path: str, tier: str) -> bool:
        if self.tier is not None and self.tier != tier:
            return False
        if self.path.endswith("*"):
            return path.startswith(self.path[:-1])
        return path == self.path

    @property
    def parsed_policy(self) -> Policy:
        return Policy.parse(self.policy)

    @property
    def judge_policy(self) -> Policy:
        """What the rule's decisions are judged by: ``judged_by``, else its own policy."""
        return Policy.parse(self.judged_by or self.policy)


@dataclass(frozen=True)
class Rules:
    """The rules in match order, and the outbound rule (named ``OUTBOUND``)."""

    rules: tuple[Rule, ...]
    outbound: Rule

    def match(self, path: str, tier: str) -> Rule | None:
        return next((rule for rule in self.rules if rule.matches(path, tier)), None)

    @property
    def all(self) -> tuple[Rule, ...]:
        """Every rule, the outbound one last."""
        return (*self.rules, self.outbound)

    def named(self, name: str) -> Rule:
        for rule in self.all:
            if rule.name == name:
                return rule
        raise RulesError(f"no rule named {name!r}; the rules are {', '.join(self.names)}")

    @property
    def names(self) -> list[str]:
        return [rule.name for rule in self.all]

    def with_default(
        self,
        limiter: str | None,
        policy: str | None,
        judged_by: str | None = None,
        cost: str | None = None,
        refund: str | None = None,
    ) -> Rules:
        """These rules with the default endpoint's rule (``api``) set to ``limiter``,
        ``policy``, ``judged_by``, ``cost`` and ``refund``. Without a policy, a catalogue
        limiter that cannot enforce the rule's kind gets the catalogue's example policy."""
        if (limiter, policy, judged_by, cost, refund) == (None,) * 5:
            return self
        rule = self.named(DEFAULT_RULE)
        limiter = limiter or rule.limiter
        if policy is None:
            entry = CATALOGUE.get(limiter)
            keeps = entry is None or entry.promise == rule.parsed_policy.promise
            policy = rule.policy if keeps or entry is None else entry.policy
        judged_by = judged_by or rule.judged_by
        changed = replace(
            rule,
            limiter=limiter,
            policy=policy,
            judged_by=judged_by,
            cost=cost or rule.cost,
            refund=refund or rule.refund,
        )
        return validated(
            tuple(changed if r.name == DEFAULT_RULE else r for r in self.rules), self.outbound
        )

    @property
    def served(self) -> bool:
        """Enforced by a service of the user's own, not by the harness's app."""
        return all(rule.limiter == SERVICE for rule in self.rules)

    @property
    def decided_on(self) -> str:
        """The side whose journals hold the decisions: the instances', or where a service of
        the user's own keeps none, its clients' (``journals.SIDES``)."""
        return "client" if self.served else "server"

    def to_json(self) -> str:
        rules = [{k: v for k, v in asdict(rule).items() if v is not None} for rule in self.rules]
        outbound = {"limiter": self.outbound.limiter, "policy": self.outbound.policy}
        return json.dumps({"rule": rules, "outbound": outbound, "served": self.served})


DEFAULT_RULE = "api"
# The chapter's Part 8 endpoints. /api/* is scaled from its 100 a day (free) and 10,000 a day
# (pro) to per-second budgets, so a run of seconds crosses many windows.
DEFAULT_RULES = (
    Rule("login", "/login", "fixed-window-lua", "fixed-window:limit=5,window=900"),
    Rule("send-otp", "/send-otp", "sliding-log-lua", "sliding-window:limit=3,window=3600"),
    Rule("api", "/api/*", "fixed-window-lua", "fixed-window:limit=10,window=1", "free"),
    Rule("api-pro", "/api/*", "token-bucket-lua", "token-bucket:capacity=100,rate=100", "pro"),
)
DEFAULT_OUTBOUND = Rule(OUTBOUND, "", "leaky-bucket", "leaky-bucket:rate=10,capacity=20")


# A service of the user's own: its /api/* at the default endpoint's budget, every tier.
SERVED_RULES = (Rule("api", "/api/*", SERVICE, "fixed-window:limit=10,window=1"),)


def default_rules(served: bool = False) -> Rules:
    return Rules(SERVED_RULES if served else DEFAULT_RULES, DEFAULT_OUTBOUND)


def load_rules(path: str | os.PathLike[str] | None, *, served: bool = False) -> Rules:
    """The rules of a TOML file, or the defaults for None; ``served``: rules a service of the
    user's own enforces (they name no limiter). Raises RulesError."""
    if path is None:
        return default_rules(served)
    try:
        with open(path, "rb") as file:
            data = tomllib.load(file)
    except OSError as error:
        raise RulesError(f"{os.fspath(path)}: {error.strerror or error}") from None
    except tomllib.TOMLDecodeError as error:
        raise RulesError(f"{os.fspath(path)}: not TOML: {error}") from None
    return _from_data(data, os.fspath(path), served)


def rules_from_json(text: str) -> Rules:
    """What ``Rules.to_json`` wrote (the form passed to app instances and Locust)."""
    data = json.loads(text)
    return _from_data(data, "rules JSON", bool(data.pop("served", False)))


def _from_data(data: dict[str, Any], source: str, served: bool = False) -> Rules:
    unknown = set(data) - {"rule", "outbound"}
    if unknown:
        raise RulesError(f"{source}: unknown table {sorted(unknown)[0]!r}; expected rule, outbound")
    tables = data.get("rule", [])
    if not isinstance(tables, list) or not tables:
        raise RulesError(f"{source}: expected at least one [[rule]] table")
    if served:
        tables = [_served(table, source, number) for number, table in enumerate(tables, 1)]
    rules = tuple(_rule(table, source, number) for number, table in enumerate(tables, 1))
    outbound = data.get("outbound")
    if outbound is None:
        return _validated_from(source, rules, DEFAULT_OUTBOUND)
    if not isinstance(outbound, dict) or not set(outbound) <= {"limiter", "policy"}:
        raise RulesError(f"{source}: [outbound] is a table of limiter and policy, no more")
    out = _rule({"name": OUTBOUND, "path": "", **outbound}, source, "outbound")
    return _validated_from(source, rules, out)


def _validated_from(source: str, rules: Sequence[Rule], outbound: Rule) -> Rules:
    try:
        return validated(rules, outbound)
    except RulesError as error:
        raise RulesError(f"{source}: {error}") from None


def _served(table: object, source: str, number: int) -> object:
    """A rule of a service of the user's own: it names no limiter (the service decides)."""
    if not isinstance(table, dict) or table.get("limiter", SERVICE) == SERVICE:
        return table if not isinstance(table, dict) else {**table, "limiter": SERVICE}
    raise RulesError(
        f"{source}: rule {number} names limiter {table['limiter']!r}, but the service under "
        "test decides: drop the field"
    )


def _rule(table: object, source: str, where: object) -> Rule:
    if not isinstance(table, dict):
        raise RulesError(f"{source}: rule {where} is not a table")
    unknown = set(table) - set(_FIELDS)
    if unknown:
        raise RulesError(f"{source}: rule {where} has unknown field {sorted(unknown)[0]!r}")
    missing = [name for name in _FIELDS[:4] if name not in table]
    if missing:
        raise RulesError(f"{source}: rule {where} needs {', '.join(missing)}")
    if not all(isinstance(value, str) for value in table.values()):
        raise RulesError(f"{source}: rule {where}: every field is a string")
    return Rule(**table)


def validated(rules: Sequence[Rule], outbound: Rule) -> Rules:
    """Rules whose names are unique, paths absolute, tiers known, limiters and policies real
    (each limiter is built on no Redis, so a limiter that cannot enforce its policy fails now).
    """
    names = [rule.name for rule in rules]
    problems = _problems(rules, names)
    problems += [
        f"rule {rule.name!r}: {why}" for rule in (*rules, outbound) for why in _check(rule)
    ]
    if problems:
        raise RulesError(problems[0])
    return Rules(tuple(rules), outbound)


def _problems(rules: Iterable[Rule], names: list[str]) -> list[str]:
    found = []
    for rule in rules:
        if not rule.name or rule.name == OUTBOUND or names.count(rule.name) > 1:
            found.append(f"rule name {rule.name!r} is empty, reserved or used twice")
        if not rule.path.startswith("/"):
            found.append(f"rule {rule.name!r}: path {rule.path!r} must start with '/'")
        if rule.tier is not None and rule.tier not in TIERS:
            found.append(f"rule {rule.name!r}: tier {rule.tier!r} is not one of {TIERS}")
    return found


def _check(rule: Rule) -> list[str]:
    """Why the rule's limiter cannot enforce its policy, if it cannot. A catalogue limiter is
    built on a stand-in client to ask it; a plug-in is only imported (its factory may need a
    real Redis)."""
    problem = _field_problem(rule)
    if problem:
        return [problem]
    try:
        policy = rule.parsed_policy
        unloadable = _not_for_load(policy) or _not_for_load(rule.judge_policy)
        if unloadable:
            return [unloadable]
        if rule.limiter == SERVICE:
            return []
        builder = resolve(rule.limiter)
        if rule.limiter in CATALOGUE:
            limiter = builder(_ScriptsOnly(), policy)
            if rule.refund != NEVER and not callable(getattr(limiter, "refund", None)):
                return [
                    f"{rule.limiter} cannot give a request back (it has no refund): drop refund"
                ]
    except ValueError as error:  # PolicyError, PluginError, UnknownLimiter
        return [str(error)]
    return []


def _field_problem(rule: Rule) -> str:
    """What is wrong with one of the rule's plain fields ('' when nothing is)."""
    problems = [
        (
            rule.on_error not in ON_ERROR,
            f"on_error {rule.on_error!r} is not one of {', '.join(ON_ERROR)}",
        ),
        (not _header_name(rule.identity), f"identity {rule.identity!r} is not a header name"),
        (
            rule.cost.isdigit() and int(rule.cost) < 1,
            f"cost {rule.cost!r}: a request costs 1 or more",
        ),
        (
            not rule.cost.isdigit() and not _header_name(rule.cost),
            f"cost {rule.cost!r} is neither a whole number nor a header name",
        ),
        (
            rule.limiter == SERVICE and rule.cost != "1",
            "a service of your own decides what a request costs: drop cost",
        ),
        (rule.refund not in REFUND, f"refund {rule.refund!r} is not one of {', '.join(REFUND)}"),
        (
            rule.limiter == SERVICE and rule.refund != NEVER,
            "a service of your own gives back what it gives back: drop refund",
        ),
    ]
    return next((problem for wrong, problem in problems if wrong), "")


def _header_name(text: str) -> bool:
    return bool(text.strip()) and not any(c in text for c in ":\r\n ")


def _not_for_load(policy: Policy) -> str:
    """Why load cannot judge ``policy`` yet ('' when it can)."""
    if any(limit.phase != "none" for limit in policy.limits or (policy,)):
        return (
            "phase=crc32 hashes the identity a limiter is given, which load prefixes with the "
            "run and the rule; race and check judge it"
        )
    return ""


class _ScriptsOnly:
    """Enough of a client to build a catalogue limiter: it registers its script, no more."""

    def register_script(self, source: str) -> None:
        return None
