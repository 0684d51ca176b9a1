"""The race explorer in a user's own test suite (registered as the ``ratelimit_harness`` pytest
plugin through the ``pytest11`` entry point):

    def test_my_limiter(race):
        result = race("mymod:factory", "fixed-window:limit=1,window=10")
        assert result.clean, result

``race(limiter, policy, **options)`` explores with the engine behind ``ratelimit-harness race``
and returns a ``RaceResult``; ``redis_url`` is the Redis it races on (``$REDIS_URL``, else one
the harness starts, once per session). The explorer is imported only when a test races.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ratelimit_harness.harness.explorer.search.explore import Exploration
    from ratelimit_harness.harness.provision import RedisServer

# factory objects passed to ``race``, each under a name that ``limiters.resolve`` imports like
# any ``module:attribute`` plug-in, so the explorer (and its instance threads) needs nothing new


@dataclass(frozen=True)
class RaceResult:
    """What a race found: ``flaws`` (the violation kinds of the shortest failing schedule; empty
    when none was found), ``trace`` (that schedule as a numbered trace) and ``exploration``
    (every figure of the search). Its repr is the trace, for ``assert result.clean, result``.
    ``unscheduled``: the commands Redis ran for clients the explorer cannot see (None: not
    counted, on a Redis the harness did not start); a race with any raises ``Unscheduled``
    unless told ``allow_unscheduled=True``. A program whose clock cannot be controlled here
    raises ``ClockUncontrolled``, and a limiter that reads a clock the explorer cannot move
    (its decisions' ``now`` off the schedule) raises ``RealClock``, unless told
    ``allow_real_clock=True`` (see ``race --allow-real-clock``)."""

    limiter: str
    policy: str
    flaws: frozenset[str]
    trace: str
    exploration: Exploration
    unscheduled: int | None = None

    @property
    def clean(self) -> bool:
        return not self.flaws

    @property
    def faults(self) -> frozenset[str]:
        """The nemesis' faults the shortest failing schedule needs (empty: none)."""
        return self.exploration.faults

    @property
    def covered(self) -> str:
        """What the race explored: the bound it proved, then what it only sampled."""
        return self.exploration.covered

    def __repr__(self) -> str:
        found = self.exploration
        if self.clean:
            return (
                f"{self.limiter} with {self.policy}: no violation in {found.examples} "
                f"schedules; explored {found.covered}"
            )
        return f"{self.limiter} with {self.policy}: {', '.join(sorted(self.flaws))}\n{self.trace}"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("race", "rate-limiter races (ratelimit-harness)")
    group.addoption(
        "--race-profile",
        choices=("quick", "thorough"),
        default="quick",
        help="schedules per search: quick (300) or thorough (1000); a search for one flaw "
        "may draw ten times as many, as race-test's do",
    )
    group.addoption(
        "--race-seed",
        type=int,
        help="the random stage's seed (without it, each race derives one from its limiter, "
        "policy and faults)",
    )


@pytest.fixture(scope="session")
def race_redis_server() -> Iterator[RedisServer]:
    """The Redis races run on: ``$REDIS_URL`` (it must hold no keys; a race deletes only the
    keys it made), else a container where Docker answers, else an embedded server (each race
    flushes it); started once per session."""
    from ratelimit_harness.harness.provision import provision_explorer

    with provision_explorer() as server:
        yield server


@pytest.fixture(scope="session")
def redis_url(race_redis_server: RedisServer) -> str:
    """The URL of the Redis races run on."""
    return race_redis_server.url


@pytest.fixture
def race(race_redis_server: RedisServer, pytestconfig: pytest.Config) -> Callable[..., RaceResult]:
    """``race(limiter, policy, *, instances=2, max_examples=None, seed=None, nemesis=None,
    max_skew=None, costs=(1,), give_back=False, flaw=None, judge_by=None,
    allow_unscheduled=False, allow_real_clock=False)``: ``limiter`` is a
    catalogue name, a ``module:attribute``, ``exec:COMMAND`` or a factory ``factory(client,
    policy)`` (``async def`` too); ``race(exec=COMMAND, policy=...)`` races a program (any
    language, on the line protocol); ``nemesis`` the faults a schedule may draw (some of
    ``crash``, ``stall``, ``skew``; default all, ``"none"`` or ``()`` none: interleavings and
    time passing between requests only); ``max_skew`` the largest clock skew in seconds;
    ``costs`` what a request may cost (each draws one, asked as ``check(identity, cost)``);
    ``give_back`` gives back every other admitted request (``refund(identity, decision)``);
    ``flaw`` a violation kind to search for (any, by default); ``judge_by`` a policy to judge by
    instead of ``policy``; ``allow_unscheduled`` judges a limiter even though Redis ran commands
    of it by a client the explorer cannot see (as ``race --allow-unscheduled``; else that raises
    ``Unscheduled``); ``allow_real_clock`` judges one that reads a clock the explorer cannot move
    (as ``race --allow-real-clock``; else that raises ``RealClock``, or ``ClockUncontrolled``
    for a program where clocks cannot be controlled here)."""
    profile = pytestconfig.getoption("race_profile")
    seed = pytestconfig.getoption("race_seed")

    def run(
        limiter: str | Callable[..., Any] | None = None,
        policy: str | None = None,
        *,
        exec: str | None = None,  # race(exec="node my_limiter.js", policy=...)
        **options: Any,
    ) -> RaceResult:
        if (limiter is None) == (exec is None) or policy is None:
            raise TypeError("race(limiter, policy) or race(exec=COMMAND, policy=SPEC)")
        options.setdefault("seed", seed)  # --race-seed, unless the test gives its own
        named = limiter if exec is None else f"exec:{exec}"
        assert named is not None
        return _race(race_redis_server, named, policy, profile=profile, **options)

    return run


def _race(
    server: RedisServer,
    limiter: str | Callable[..., Any],
    policy: str,
    *,
    profile: str,
    seed: int | None = None,
    instances: int = 2,
    max_examples: int | None = None,
    nemesis: str | Iterable[str] | None = None,
    max_skew: float | None = None,
    costs: tuple[int, ...] = (1,),
    give_back: bool = False,
    flaw: str | None = None,
    judge_by: str | None = None,
    allow_unscheduled: bool = False,
    allow_real_clock: bool = False,
) -> RaceResult:
    from ratelimit_harness.harness.errors import (
        ClockUncontrolled,
        LimiterError,
        RealClock,
        Unscheduled,
    )
    from ratelimit_harness.harness.explorer.campaign import FLAW_BUDGET, PROFILES, shows
    from ratelimit_harness.harness.explorer.clocks.real import uncontrolled
    from ratelimit_harness.harness.explorer.search.drawing import GIVE_BACKS, space_for
    from ratelimit_harness.harness.explorer.server.keyspace import claim
    from ratelimit_harness.harness.explorer.spec import RaceSpec, any_violation
    from ratelimit_harness.harness.explorer.trace import render
    from ratelimit_harness.harness.explorer.wire.unseen import said
    from ratelimit_harness.limiters import Policy, resolve

    resolve(limiter)  # a bad name fails here, with the plug-in's own message
    why = uncontrolled(limiter)
    if why and not allow_real_clock:
        raise ClockUncontrolled(f"{why}; allow_real_clock=True races it on real time")
    label = limiter if isinstance(limiter, str) else getattr(limiter, "__name__", repr(limiter))
    parsed = Policy.parse(policy)
    budget = PROFILES[profile] * (FLAW_BUDGET if flaw else 1)
    budget = budget if max_examples is None else max_examples
    judged_by = Policy.parse(judge_by) if judge_by else None
    space = replace(
        space_for(nemesis, max_skew),
        costs=tuple(costs),
        give_backs=GIVE_BACKS if give_back else (False,),
    )
    asked = RaceSpec(limiter, parsed, judged_by, space, instances, budget, seed)
    setup = asked.on_server(server, flush=claim(server, flush=False))
    found = asked.search(setup, shows(flaw) if flaw else any_violation)
    counted = setup.count_unseen
    if found.errors and not found.decisions:
        raise LimiterError(f"{label} never returned a decision; the first: {found.first_error}")
    if found.unseen and not allow_unscheduled:
        raise Unscheduled(f"{label}: {said(found.unseen, found.first_unseen)}")
    if found.off_clock.count and not allow_real_clock:
        raise RealClock(f"{label}: {found.off_clock.said()}")
    trace = "\n".join(render(found.found)) if found.found else ""
    unscheduled = found.unseen if counted else None
    result = RaceResult(label, str(parsed), frozenset(found.kinds), trace, found, unscheduled)
    print(repr(result))  # captured: pytest shows it whole when the test fails (asserts shorten it)
    return result
