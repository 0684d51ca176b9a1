"""What the study decided on Redis, kept as histories the checkers judge, so that
``ratelimit-harness check RUN_DIR`` judges a study again as it judges any run.

One history per measurement and limiter (``MEASUREMENT/LIMITER``: ``memory``, ``accuracy``,
``bursts``, ``cost``), held to the policy that limiter was built with, with the keys it left
and their TTLs, read before the study removes its keys. A decision on a virtual clock took
effect at the instant the clock stood at (``at_instants``): invoke and complete are that
instant. One on the server's own clock lies between the wall-clock instants the request was
sent and answered. A queued decision is recorded at its departure (``harness.decisions``).

Written under ``RUN_DIR/history/`` by ``keep``, three files each (``harness.rundir``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ratelimit_harness.harness.checkers import check
from ratelimit_harness.harness.decisions import decided
from ratelimit_harness.harness.history import Operation
from ratelimit_harness.harness.rundir import keep_judged
from ratelimit_harness.harness.study.instants import at_instants
from ratelimit_harness.harness.study.space import Space
from ratelimit_harness.limiters import Clock, Decision, Limiter, Policy

FOLDER = "history"


@dataclass
class History:
    """One limiter's decisions in one measurement (``process`` names the measurement in each
    operation), the policy it was built with, and the keys it left (key -> TTL in seconds)."""

    limiter: str
    policy: Policy
    process: str
    operations: list[Operation] = field(default_factory=list)
    ttls: dict[str, float] = field(default_factory=dict)
    clock: Callable[[], float] = time.time  # the wall clock, for decisions on the server's

    def at_instants(
        self, build: Callable[[Clock], Limiter], times: Sequence[float], identity: str
    ) -> list[Decision]:
        """``at_instants``, each decision recorded at its instant."""
        decisions = at_instants(build, times, identity)
        self.operations += (
            decided(self.process, identity, t, t, d) for t, d in zip(times, decisions, strict=True)
        )
        return decisions

    def check(self, limiter: Limiter, identity: str) -> tuple[Decision, float]:
        """One request of ``identity`` on the server's clock, recorded between the wall-clock
        instants around it; the decision, and the seconds it took (``perf_counter``'s, the
        recording left out)."""
        invoked = self.clock()
        began = time.perf_counter()
        decision = limiter.check(identity)
        took = time.perf_counter() - began
        self.operations.append(decided(self.process, identity, invoked, self.clock(), decision))
        return decision, took

    def keys_left(self, space: Space, identities: Iterable[str]) -> None:
        """Note the keys this limiter holds for ``identities`` now, with their TTLs."""
        self.ttls |= space.ttls_of(self.limiter, identities)


class Histories:
    def __init__(self) -> None:
        self.named: dict[str, History] = {}

    def of(self, measurement: str, limiter: str, policy: Policy) -> History:
        """The history of ``limiter`` in ``measurement`` (begun on first use)."""
        name = f"{measurement}/{limiter}"
        found = self.named.setdefault(name, History(limiter, policy, measurement))
        if found.policy != policy:
            raise ValueError(f"{name} holds {found.policy}, not {policy}")
        return found

    def keep(self, run_dir: Path) -> None:
        """Judge each history under its policy and keep it in ``run_dir/history/``."""
        for name, history in self.named.items():
            verdict = check(history.operations, history.policy, history.ttls)
            keep_judged(
                run_dir,
                f"{FOLDER}/{name}",
                policy=history.policy,
                history=history.operations,
                ttls=history.ttls,
                verdict=verdict,
            )
