"""One race, as a value: what every entry point (``race``, a ``race-test`` row, the pytest
plugin) asks of the explorer, so that each builds one of these and none assembles a search of
its own."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ratelimit_harness.harness.checkers import Verdict
from ratelimit_harness.harness.errors import BadArgument
from ratelimit_harness.harness.explorer.schedule.run import Setup
from ratelimit_harness.harness.explorer.search.drawing import Space
from ratelimit_harness.harness.explorer.search.explore import (
    Exploration,
    explore,
    explore_every_kind,
)
from ratelimit_harness.harness.explorer.wire.unseen import countable
from ratelimit_harness.harness.provision import RedisServer
from ratelimit_harness.limiters import Policy

MOST_INSTANCES, MOST_EXAMPLES = 16, 100000


def any_violation(verdict: Verdict) -> bool:
    return not verdict.valid


@dataclass(frozen=True)
class RaceSpec:
    """The limiter (a catalogue name, ``module:attribute`` or a factory), the policy it is
    built with and the one its histories are judged by (None: the same), the faults a schedule
    may draw (``space``), how many instances race, how many schedules a search may draw, and
    the seed."""

    limiter: str | Callable[..., Any]
    policy: Policy
    judged_by: Policy | None = None
    space: Space = field(default_factory=Space)
    instances: int = 2
    max_examples: int = 300
    seed: int | None = None

    def __post_init__(self) -> None:
        if not 1 <= self.instances <= MOST_INSTANCES:
            raise BadArgument(f"instances must be 1..{MOST_INSTANCES}, not {self.instances}")
        if not 1 <= self.max_examples <= MOST_EXAMPLES:
            raise BadArgument(f"max examples must be 1..{MOST_EXAMPLES}, not {self.max_examples}")

    def on(
        self, url: str, *, flush: bool, clock_file: str = "", count_unseen: bool = False
    ) -> Setup:
        """The race on the Redis at ``url`` (see ``Setup`` for the rest)."""
        return Setup(
            self.limiter,
            self.policy,
            self.instances,
            url,
            self.judged_by,
            flush,
            clock_file,
            count_unseen,
            self.space.give_backs,
        )

    def on_server(self, server: RedisServer, *, flush: bool) -> Setup:
        """The race on a Redis of ``provision``'s: each schedule on a flushed database when
        ``flush``, else on the keys of its own (see keyspace)."""
        count = countable(server)
        return self.on(server.url, flush=flush, clock_file=server.clock_file, count_unseen=count)

    def search(
        self,
        setup: Setup,
        wanted: Callable[[Verdict], bool] = any_violation,
        *,
        on_example: Callable[[Exploration], None] = lambda _: None,
    ) -> Exploration:
        """One search for what ``wanted`` accepts (any violation, by default)."""
        return explore(
            setup,
            wanted=wanted,
            space=self.space,
            max_examples=self.max_examples,
            seed=self.seed,
            on_example=on_example,
        )

    def search_every_kind(
        self, setup: Setup, *, on_example: Callable[[Exploration], None] = lambda _: None
    ) -> list[Exploration]:
        """Searches until one finds no kind of violation not found yet (``race``)."""
        return explore_every_kind(
            setup,
            space=self.space,
            max_examples=self.max_examples,
            seed=self.seed,
            on_example=on_example,
        )
