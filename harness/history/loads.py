"""A load run's verdict as its run directory holds it (``verdict.json``): per rule, the verdict
of what the instances decided and of what the clients saw, the header lies, the latency. Written
by ``harness.load.judge.final``, read back by the reports: one schema, both ways.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ratelimit_harness.harness.history.files import write_json
from ratelimit_harness.harness.history.verdict import Verdict

VERDICT = "verdict.json"  # in the load run's directory
OUTBOUND = "outbound"  # the rule of the calls the instances make (not the clients' requests)


@dataclass
class RuleRecord:
    """One rule's verdict: the instances' history (``server``) and the clients' (``client``).
    A rule a service of the user's own enforced (``served``) has one history, its clients'
    (they saw its decisions): both verdicts are its verdict."""

    name: str
    path: str  # the routes it limits
    limiter: str
    policy: str
    judged_by: str
    server: Verdict
    client: Verdict
    header_lies: dict[str, int] = field(default_factory=dict)  # per kind of lie, how many
    header_lie_examples: dict[str, str] = field(default_factory=dict)
    latency_ms: dict[str, float] = field(default_factory=dict)  # as the clients measured it
    client_outcomes: dict[str, int] = field(default_factory=dict)
    first_error: str | None = None  # how its limiter failed, the first time it did
    served: bool = False
    sent: int = 0  # requests its clients' journals say were sent (each judged: ``client``)

    @property
    def sides(self) -> list[tuple[str, Verdict]]:
        """Each history judged, by whose it is."""
        if self.served:
            return [("clients", self.client)]
        return [("instances", self.server), ("clients", self.client)]

    @property
    def undecided(self) -> bool:
        """Its limiter failed every request: nothing was decided, so nothing can be judged."""
        outcomes = self.server.metrics.get("outcomes", {})
        decided = outcomes.get("allowed") or outcomes.get("rejected")
        return bool(self.first_error) and not decided

    @property
    def lies(self) -> int:
        return sum(self.header_lies.values())

    @property
    def valid(self) -> bool:
        return self.server.valid and self.client.valid and not self.lies

    @property
    def found(self) -> set[str]:
        """The kinds of violation either side shows, and of header lie."""
        return self.server.kinds | self.client.kinds | {k for k, n in self.header_lies.items() if n}

    @property
    def checks(self) -> list[str]:
        """The kinds its verdicts judged, then any other kind one names."""
        checked = self.server.checked + self.client.checked
        found = [v.kind for v in self.server.violations + self.client.violations]
        return list(dict.fromkeys(checked + sorted(found)))

    @property
    def unjudged(self) -> dict[str, str]:
        """The kinds its verdicts could not judge, and why."""
        return self.server.unjudged | self.client.unjudged

    def count(self, kind: str) -> int:
        """Violations of a kind: as the instances' history shows them, else the clients'."""
        return self.server.count(kind) or self.client.count(kind)

    def to_json(self) -> dict[str, Any]:
        return {
            "rule": self.name,
            "path": self.path,
            "limiter": self.limiter,
            "policy": self.policy,
            "judged_by": self.judged_by,
            "valid": self.valid,
            "server": self.server.to_json(),
            "client": self.client.to_json(),
            "header_lies": self.header_lies,
            "header_lie_examples": self.header_lie_examples,
            "latency_ms": self.latency_ms,
            "client_outcomes": self.client_outcomes,
            "first_error": self.first_error,
            "served": self.served,
            "sent": self.sent,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RuleRecord:
        return cls(
            name=str(data["rule"]),
            path=str(data["path"]),
            limiter=str(data["limiter"]),
            policy=str(data["policy"]),
            judged_by=str(data["judged_by"]),
            server=Verdict.from_json(data["server"]),
            client=Verdict.from_json(data["client"]),
            header_lies={str(k): int(v) for k, v in data["header_lies"].items()},
            header_lie_examples={str(k): str(v) for k, v in data["header_lie_examples"].items()},
            latency_ms={str(k): float(v) for k, v in data["latency_ms"].items()},
            client_outcomes={str(k): int(v) for k, v in data["client_outcomes"].items()},
            first_error=None if data["first_error"] is None else str(data["first_error"]),
            served=bool(data.get("served", False)),
            sent=int(data.get("sent", 0)),
        )


@dataclass
class FaultEffect:
    """What one fault did to one rule's requests (``harness.load.faults.effects``)."""

    requests: int  # invoked while the fault lasted
    undecided: int  # its limiter failed them (no decision), from the fault until it recovered
    lost: int  # in flight at an instance killed by the fault: never answered
    on_error: str  # what an undecided one got: "closed" (refused) or "open" (admitted)
    recovery: float | None  # seconds from the fault's end to deciding normally; None: never
    over_admitted: int = 0  # over-admissions whose span the fault fell in (its lost counts)
    promises_broken: int = 0  # broken Remaining promises whose window it fell in (the same)

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FaultEffect:
        recovery = data["recovery"]
        return cls(
            int(data["requests"]),
            int(data["undecided"]),
            int(data["lost"]),
            str(data["on_error"]),
            None if recovery is None else float(recovery),
            int(data.get("over_admitted", 0)),
            int(data.get("promises_broken", 0)),
        )


@dataclass
class FaultRecord:
    """One fault of the run's nemesis, as ``RUN_DIR/faults.jsonl`` marks it, and its effects."""

    fault: str
    turn: int
    start: float
    end: float | None  # None: it never ended (the run stopped first, or it could not be undone)
    detail: str = ""
    effects: dict[str, FaultEffect] = field(default_factory=dict)  # per rule

    def to_json(self) -> dict[str, Any]:
        return {
            "fault": self.fault,
            "turn": self.turn,
            "start": self.start,
            "end": self.end,
            "detail": self.detail,
            "effects": {rule: effect.to_json() for rule, effect in self.effects.items()},
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FaultRecord:
        return cls(
            str(data["fault"]),
            int(data["turn"]),
            float(data["start"]),
            None if data["end"] is None else float(data["end"]),
            str(data.get("detail", "")),
            {str(k): FaultEffect.from_json(v) for k, v in data.get("effects", {}).items()},
        )


@dataclass
class LoadRecord:
    rules: list[RuleRecord]
    seconds: float
    setup: dict[str, Any] = field(default_factory=dict)  # how the run was set up, as it says
    faults: list[FaultRecord] = field(default_factory=list)  # the nemesis's, in order

    @property
    def valid(self) -> bool:
        return all(r.valid for r in self.rules)

    @property
    def requests(self) -> int:
        """Requests as the clients counted them, or as the instances did where no client
        reported (``serve`` under another load generator)."""
        inbound = [r for r in self.rules if r.name != OUTBOUND]
        return sum(sum(r.client_outcomes.values()) or r.server.operations for r in inbound)

    @property
    def sent(self) -> int:
        """Requests the clients' journals say were sent."""
        return sum(r.sent for r in self.rules if r.name != OUTBOUND)

    @property
    def judged(self) -> int:
        """Requests in the clients' histories that were judged: every one sent, if none was lost."""
        return sum(r.client.operations for r in self.rules if r.name != OUTBOUND and r.sent)

    @property
    def requests_per_second(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "valid": self.valid,
            "seconds": self.seconds,
            "requests": self.requests,
            "sent": self.sent,
            "judged": self.judged,
            "requests_per_second": self.requests_per_second,
            "rules": [r.to_json() for r in self.rules],
            "setup": self.setup,
            "faults": [fault.to_json() for fault in self.faults],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LoadRecord:
        rules = [RuleRecord.from_json(r) for r in data["rules"]]
        faults = [FaultRecord.from_json(f) for f in data.get("faults", [])]
        return cls(rules, float(data["seconds"]), dict(data.get("setup", {})), faults)

    def write(self, directory: Path) -> Path:
        path = directory / VERDICT
        write_json(path, self.to_json())
        return path

    @classmethod
    def read(cls, directory: Path) -> LoadRecord:
        """The verdict of the load run in ``directory``; OSError, or ValueError saying why."""
        path = directory / VERDICT
        try:
            return cls.from_json(json.loads(path.read_text(encoding="utf-8")))
        except (KeyError, TypeError, AttributeError) as error:
            raise ValueError(f"{path}: not a load verdict ({error!r})") from None
