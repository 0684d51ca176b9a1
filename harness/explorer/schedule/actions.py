"""What a schedule is made of: the steps of the instances and the nemesis' faults."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Step:
    """Instance ``instance`` goes on: starts a request for ``identity`` if it is idle, else
    sends the command it is waiting to send. A request costs ``cost`` units of the budget."""

    instance: int
    identity: str
    cost: int = 1


@dataclass(frozen=True)
class Through:
    """Instance ``instance`` runs one whole request for ``identity`` (or the rest of the one it
    is in) with no one else in between: the explorer's shortcut past interleavings that do not
    matter, so faults that need time to pass are reached in few actions."""

    instance: int
    identity: str
    cost: int = 1


@dataclass(frozen=True)
class Advance:
    """Time passes for everyone; keys whose TTL runs out expire now."""

    seconds: float


@dataclass(frozen=True)
class Crash:
    """The instance dies: the command it was about to send never reaches Redis."""

    instance: int


@dataclass(frozen=True)
class Skew:
    """The instance's clock jumps by ``seconds`` (and stays off by that much)."""

    instance: int
    seconds: float


Action = Step | Through | Advance | Crash | Skew


def to_json(action: Action) -> dict[str, object]:
    """The action as a trace holds it (a request's cost only when it is not 1)."""
    fields = {name: value for name, value in vars(action).items() if (name, value) != ("cost", 1)}
    return {"action": type(action).__name__.lower(), **fields}


KINDS: dict[str, type[Action]] = {
    kind.__name__.lower(): kind for kind in (Step, Through, Advance, Crash, Skew)
}


def from_json(record: dict[str, object]) -> Action:
    fields = {k: v for k, v in record.items() if k != "action"}
    return KINDS[str(record["action"])](**fields)  # type: ignore[arg-type]
