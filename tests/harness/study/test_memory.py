from harness.study.memory import per_identity, sorted_set
from harness.study.space import Space


def test_the_log_grows_with_requests_and_the_fixed_window_stays_flat(space: Space) -> None:
    found = per_identity(space, (1, 10, 100))
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
    # 16 bytes of score and 32 of member at the least, more in a skiplist
    assert 48 < many["bytes_per_entry"] < one["bytes_per_entry"] < 400
    assert space.client.dbsize() == 0
