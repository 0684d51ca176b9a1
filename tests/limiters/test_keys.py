"""Keys per policy: two limiters, or two policies of one kind, never share a key of an identity,
on one Redis and on a Cluster, so one identity can be held by a login and an API policy at once."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import pytest
import redis
from redis.cluster import RedisCluster

from ratelimit_harness.limiters import CATALOGUE, Decision, Limiter, Policy
from ratelimit_harness.limiters.base import RedisLimiter
from tests.clocks import ManualClock, advance

CORRECT = [name for name, entry in CATALOGUE.items() if not entry.flaws]
ON_REDIS = [
    name
    for name, entry in CATALOGUE.items()
    if isinstance(entry.factory, type) and issubclass(entry.factory, RedisLimiter)
]
IDENTITY = "user:1"


class KeyRecorder:
    """The client a limiter is given, noting the KEYS of every script it runs (a correct
    limiter's only command is its script's EVALSHA)."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.keys: set[str] = set()

    def execute_command(self, name: str, sha: str, numkeys: int, *rest: object) -> Any:
        assert name == "EVALSHA"
        self.keys.update(str(key) for key in rest[:numkeys])
        return self.client.execute_command(name, sha, numkeys, *rest)

    def script_load(self, source: str) -> Any:
        return self.client.script_load(source)

    def of(self, identity: str) -> set[str]:
        return {key for key in self.keys if "{" + identity + "}" in key}


def build(name: str, client: Any, policy: Policy, clock: ManualClock) -> Limiter:
    return CATALOGUE[name].build(client, policy, clock=clock, server_clock=clock)


def two_policies(name: str) -> tuple[Policy, Policy]:
    """The entry's policy and another of its kind with twice the limit, or twice the capacity
    (a composite: each of its limits so)."""
    policy = Policy.parse(CATALOGUE[name].policy)
    return policy, each_limit(policy, doubled)


def doubled(policy: Policy) -> Policy:
    if policy.limit is not None:
        return replace(policy, limit=2 * policy.limit)
    return replace(policy, capacity=2 * (policy.capacity or 0))


def each_limit(policy: Policy, change: Callable[[Policy], Policy]) -> Policy:
    """``change`` applied to the policy, or to each limit of a composite."""
    if policy.limits:
        return replace(policy, limits=tuple(map(change, policy.limits)))
    return change(policy)


def slower(policy: Policy, times: float) -> Policy:
    """``policy`` with its windows ``times`` as long, its rate ``times`` as slow."""

    def slowed(limit: Policy) -> Policy:
        window = limit.window * times if limit.window is not None else None
        rate = limit.rate / times if limit.rate is not None else None
        return replace(limit, window=window, rate=rate)

    return each_limit(policy, slowed)


def in_turn(
    asks: Sequence[tuple[Limiter, str]], clock: ManualClock, client: Any, step: float
) -> list[list[Decision]]:
    """Each (limiter, identity) asked in turn, three times a round, for twelve rounds ``step``
    seconds apart (0.25 s: across the edge of the catalogue's 2 s windows): the decisions of
    each."""
    decisions: list[list[Decision]] = [[] for _ in asks]
    for _ in range(12):
        for _ in range(3):
            for (limiter, identity), seen in zip(asks, decisions, strict=True):
                seen.append(limiter.check(identity))
        advance(clock, client, step)
    return decisions


def assert_independent(
    specs: Sequence[tuple[str, Policy]], client: Any, clock: ManualClock, step: float = 0.25
) -> set[str]:
    """Limiters built from ``specs`` hold one identity together and decide as each does alone
    (for an identity of its own, at the same instants); their keys of it are disjoint. Returns
    them all."""
    recorders = [KeyRecorder(client) for _ in specs]
    limiters = [
        build(name, recorder, policy, clock)
        for (name, policy), recorder in zip(specs, recorders, strict=True)
    ]
    alone = [(limiter, f"alone:{i}") for i, limiter in enumerate(limiters)]
    asks = [(limiter, IDENTITY) for limiter in limiters] + alone
    decisions = in_turn(asks, clock, client, step)
    for spec, together, apart in zip(specs, decisions, decisions[len(specs) :], strict=False):
        assert [(d.allowed, d.remaining) for d in together] == [
            (d.allowed, d.remaining) for d in apart
        ], spec
    key_sets = [recorder.of(IDENTITY) for recorder in recorders]
    assert all(key_sets)
    for first, second in itertools.combinations(key_sets, 2):
        assert not first & second
    return set().union(*key_sets)


def test_a_key_names_the_identity_the_algorithm_and_the_policy() -> None:
    limiter = CATALOGUE["fixed-window-incr-expire"].build(
        None, Policy.parse("fixed-window:limit=5,window=2")
    )
    assert isinstance(limiter, RedisLimiter)
    assert limiter.key("user:1") == "ratelimit:{user:1}:fixed-window-incr-expire:limit=5,window=2"
    assert limiter.key("user:1", 7) == (
        "ratelimit:{user:1}:fixed-window-incr-expire:limit=5,window=2:7"
    )


@pytest.mark.parametrize("name", ON_REDIS)
def test_a_keys_algorithm_is_the_limiters_catalogue_name(name: str) -> None:
    limiter = CATALOGUE[name].build(None, Policy.parse(CATALOGUE[name].policy))
    assert isinstance(limiter, RedisLimiter)
    assert limiter.key("u").split(":")[2] == name


def test_no_two_limiters_or_policies_name_one_key_of_an_identity() -> None:
    built = [
        CATALOGUE[name].build(None, policy) for name in ON_REDIS for policy in two_policies(name)
    ]
    keys = [limiter.key("u") for limiter in built if isinstance(limiter, RedisLimiter)]
    assert len(keys) == len(set(keys)) == 2 * len(ON_REDIS)


def test_policies_that_print_alike_still_key_apart() -> None:
    """``str`` rounds to six digits; keys carry every digit."""
    third, near = (
        Policy.parse("gcra:capacity=3,rate=0.3333333"),
        Policy("gcra", capacity=3, rate=1 / 3),
    )
    assert str(third) == str(near)
    assert third.exact_params() == "capacity=3,rate=0.3333333"
    assert third.exact_params() != near.exact_params()
    assert Policy.parse(f"gcra:{near.exact_params()}") == near


@pytest.mark.integration
@pytest.mark.parametrize("pair", list(itertools.combinations(CORRECT, 2)), ids="+".join)
def test_two_correct_limiters_hold_one_identity_apart(
    pair: tuple[str, str], client: redis.Redis, clock: ManualClock
) -> None:
    assert_independent(
        [(name, Policy.parse(CATALOGUE[name].policy)) for name in pair], client, clock
    )


@pytest.mark.integration
@pytest.mark.parametrize("name", CORRECT)
def test_two_policies_of_one_kind_keep_separate_counts(
    name: str, client: redis.Redis, clock: ManualClock
) -> None:
    """A login policy and an API policy, say: the smaller one refusing leaves the other's
    budget whole."""
    login, api = two_policies(name)
    assert_independent([(name, login), (name, api)], client, clock)


@pytest.mark.integration
@pytest.mark.cluster
@pytest.mark.realtime  # a Cluster's keys count down in real time
def test_on_a_cluster_every_key_of_an_identity_hashes_to_its_slot(
    cluster_client: RedisCluster, clock: ManualClock
) -> None:
    # a round of asks on a Cluster in a container takes about 0.4 s of real time, in which its
    # keys count down: every window ten times as long, and every step between rounds
    specs = [(name, slower(policy, 10)) for name in CORRECT for policy in two_policies(name)]
    keys = assert_independent(specs, cluster_client, clock, step=2.5)
    # one key each for these limiters, one a limit for a composite's
    assert len(keys) == sum(len(policy.limits) or 1 for _, policy in specs)
    slot = cluster_client.cluster_keyslot(IDENTITY)  # the server's answer, CLUSTER KEYSLOT
    assert {cluster_client.cluster_keyslot(key) for key in keys} == {slot}
