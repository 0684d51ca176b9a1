"""How far the sliding-window counter (and, for contrast, the fixed window) strays from the
exact sliding window, over a synthetic workload of many sources (``workload``).

Decisions are simulated with the reference models (``limiters/reference.py``), not sent to
Redis: a million requests take seconds in memory and many minutes of round trips, and the
models are the yardstick the Lua limiters are held to request by request
(``property_tests/test_model_machine.py``). The first ``on_redis`` sources are also run
through the Lua limiters on a virtual server clock, and every decision compared with the
model's: the study says how many agreed (and keeps those decisions as histories, ``judged``).

Each policy keeps its own state (what it admitted), as it would if deployed alone; a request
is *wrongly allowed* when the approximation admits it and the exact sliding window, on the same
traffic, refuses it, and *wrongly limited* the other way round (Cloudflare's measure: 0.003 %
of 400 million requests from 270,000 sources were wrongly allowed or limited). A source far
over its limit is refused by both most of the time, but each admits at its own instants (the
exact window as old requests slide out, the counter as the previous window's weight fades):
every such instant counts once each way, while the counts admitted stay close
(``net_excess_share``: admitted by the approximation less admitted by the exact window).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ratelimit_harness.harness.progress import Progress
from ratelimit_harness.harness.study.instants import at_instants
from ratelimit_harness.harness.study.judged import Histories
from ratelimit_harness.harness.study.space import Space
from ratelimit_harness.harness.study.workload import Workload
from ratelimit_harness.limiters.policy import Policy
from ratelimit_harness.limiters.reference import Reference

EXACT = "sliding-window"
APPROXIMATIONS = {"sliding-counter": "sliding-counter-lua", "fixed-window": "fixed-window-lua"}
LUA = {EXACT: "sliding-log-lua", **APPROXIMATIONS}


@dataclass
class Tally:
    """How one approximation's decisions compare with the exact sliding window's: requests
    wrongly allowed or limited, and sources (one is *limited* when any of its requests is)."""

    requests: int = 0
    exact_allowed: int = 0
    allowed: int = 0
    wrongly_allowed: int = 0
    wrongly_limited: int = 0
    sources: int = 0
    sources_limited_exact: int = 0  # sources the exact window limited at least once
    requests_of_those: int = 0  # the requests those sources sent
    sources_wrong: int = 0  # sources with at least one decision unlike the exact one
    sources_only_exact_limited: int = 0  # the approximation never limited them
    sources_only_limited: int = 0  # the exact window never limited them

    def add(self, exact: Sequence[bool], approximate: Sequence[bool]) -> None:
        ex, ap = np.asarray(exact, bool), np.asarray(approximate, bool)
        over, under = int((ap & ~ex).sum()), int((ex & ~ap).sum())
        exact_limits, limits = not ex.all(), not ap.all()
        self.requests += len(ex)
        self.exact_allowed += int(ex.sum())
        self.allowed += int(ap.sum())
        self.wrongly_allowed += over
        self.wrongly_limited += under
        self.sources += 1
        self.sources_limited_exact += exact_limits
        self.requests_of_those += len(ex) if exact_limits else 0
        self.sources_wrong += bool(over or under)
        self.sources_only_exact_limited += exact_limits and not limits
        self.sources_only_limited += limits and not exact_limits

    def to_json(self) -> dict[str, Any]:
        wrong = self.wrongly_allowed + self.wrongly_limited
        return {
            **self.__dict__,
            "wrongly_allowed_share": _share(self.wrongly_allowed, self.requests),
            "wrongly_limited_share": _share(self.wrongly_limited, self.requests),
            "wrong_share": _share(wrong, self.requests),
            "wrong_share_of_limited_sources": _share(wrong, self.requests_of_those),
            "net_excess_share": _share(self.allowed - self.exact_allowed, self.requests),
        }


def _share(part: int, whole: int) -> float:
    return part / whole if whole else 0.0


@dataclass
class Agreement:
    """The Lua limiters against their models, decision by decision, on the first sources."""

    sources: int = 0
    decisions: int = 0
    disagreements: dict[str, int] = field(default_factory=dict)


def decide(kind: str, limit: int, window: float, times: Sequence[float]) -> list[bool]:
    """The reference model's decisions for one source's requests at ``times``."""
    policy = Policy(kind, limit=limit, window=window)
    return [d.allowed for d in at_instants(lambda clock: Reference(policy, clock=clock), times)]


def on_lua(
    space: Space,
    kind: str,
    times: Sequence[float],
    identity: str,
    kept: Histories,
    *,
    limit: int,
    window: float,
) -> list[bool]:
    """The catalogue's Lua limiter of ``kind``, on Redis, at the same virtual instants; its
    decisions, and the keys they left, go into ``kept`` (``accuracy/LIMITER``)."""
    policy = Policy(kind, limit=limit, window=window)
    history = kept.of("accuracy", LUA[kind], policy)
    decisions = history.at_instants(space.on_clock(LUA[kind], policy), times, identity)
    history.keys_left(space, [identity])
    return [d.allowed for d in decisions]


def compare(
    space: Space, workload: Workload, limit: int, on_redis: int, kept: Histories
) -> dict[str, Any]:
    tallies = {kind: Tally() for kind in APPROXIMATIONS}
    agreement = Agreement(disagreements=dict.fromkeys(LUA, 0))
    window = workload.window
    with Progress("accuracy (sources)", workload.sources) as bar:
        for number, times in enumerate(workload.sources_arrivals()):
            decisions = {kind: decide(kind, limit, window, times) for kind in LUA}
            for kind, tally in tallies.items():
                tally.add(decisions[EXACT], decisions[kind])
            if number < on_redis:
                agreement.sources += 1
                agreement.decisions += len(times) * len(LUA)
                for kind, modelled in decisions.items():
                    real = on_lua(
                        space, kind, times, f"accuracy-{number}", kept, limit=limit, window=window
                    )
                    agreement.disagreements[kind] += sum(
                        a != b for a, b in zip(real, modelled, strict=True)
                    )
            bar.advance()
    return {
        "workload": workload.describe(),
        "policy": {"limit": limit, "window": window},
        "against_exact": {kind: tally.to_json() for kind, tally in tallies.items()},
        "on_redis": agreement.__dict__,
        "cloudflare": {"requests": 400_000_000, "sources": 270_000, "wrong_share": 0.00003},
    }
