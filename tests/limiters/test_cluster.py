"""Every catalogue limiter on a 3-primary Redis Cluster: hash-tagged keys, same admissions."""

import pytest
from redis.cluster import RedisCluster

from ratelimit_harness.limiters import CATALOGUE, Policy
from tests.clocks import ManualClock
from tests.limiters.helpers import admitted, make

pytestmark = [pytest.mark.integration, pytest.mark.cluster, pytest.mark.realtime]


def budget(policy: Policy) -> int:
    if policy.limits:  # a composite admits what its tightest limit does, at one instant
        return min(map(budget, policy.limits))
    if policy.kind == "leaky-bucket":
        return (policy.capacity or 0) + 1  # one departs at once, capacity wait
    return policy.limit or policy.capacity or 0


@pytest.mark.parametrize("name", CATALOGUE)
def test_works_on_a_cluster_with_each_identitys_keys_in_one_slot(
    name: str, cluster_client: RedisCluster, clock: ManualClock
) -> None:
    entry = CATALOGUE[name]
    limiter = make(name, cluster_client, entry.policy, clock)
    expected = budget(Policy.parse(entry.policy))
    identities = ["alice", "bob", "carol"]
    for identity in identities:
        assert admitted(limiter, expected + 3, identity) == expected
    for identity in identities:
        keys = list(
            cluster_client.scan_iter(match=f"*{{{identity}}}*", target_nodes=RedisCluster.ALL_NODES)
        )
        slots = {cluster_client.keyslot(key) for key in keys}
        assert slots <= {cluster_client.keyslot(identity)}
        assert bool(keys) == (name != "in-memory")
