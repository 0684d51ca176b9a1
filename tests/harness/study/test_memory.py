import os

from ratelimit_harness.harness.study.judged import Histories
from ratelimit_harness.harness.study.memory import MEMBER_BYTES, per_identity, sorted_set
from ratelimit_harness.harness.study.space import Space


def test_the_log_grows_with_requests_and_the_fixed_window_stays_flat(space: Space) -> None:
    found = per_identity(space, (1, 10, 100), Histories())
    log = [row["bytes"] for row in found["sliding-log-lua"]]
    fixed = [row["bytes"] for row in found["fixed-window-lua"]]
    assert log[0] < log[1] < log[2]
    assert log[2] > 10 * log[0]
    assert max(fixed) < 1.5 * min(fixed)
    assert all(row["admitted"] == row["requests"] for rows in found.values() for row in rows)
    assert space.client.dbsize() == 0  # every key it made is gone


def test_a_sorted_set_entry_is_measured_whole(space: Space) -> None:
    found = sorted_set(space, entries=2000, per_set=100)
    one, many = found["one_set"], found["sets"]
    assert one["encoding"] == "skiplist"  # past 128 entries
    assert many["encoding"] == "listpack"
    # the member alone, as this server packs it: the same 32 characters in lists of as many
    # (each server packs its own way: Redis 7.0 and Valkey 9 differ by a few bytes an entry)
    member_alone = _bytes_per_member(space, lists=20, per_list=100)
    assert 32 <= member_alone < many["bytes_per_entry"]  # the score is counted too
    assert many["bytes_per_entry"] < one["bytes_per_entry"] < 400
    assert space.client.dbsize() == 0


def _bytes_per_member(space: Space, *, lists: int, per_list: int) -> float:
    keys = [space.key("members", str(i)) for i in range(lists)]
    for key in keys:
        space.client.rpush(key, *(os.urandom(MEMBER_BYTES).hex() for _ in range(per_list)))
    assert space.client.object("encoding", keys[0]) in (b"listpack", b"quicklist")
    usage = sum(int(space.client.memory_usage(key, samples=0) or 0) for key in keys)
    space.delete(keys)
    return usage / (lists * per_list)
