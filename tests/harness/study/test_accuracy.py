from ratelimit_harness.harness.checkers import check
from ratelimit_harness.harness.study.accuracy import LUA, Tally, compare, decide, on_lua
from ratelimit_harness.harness.study.judged import Histories
from ratelimit_harness.harness.study.space import Space
from ratelimit_harness.harness.study.workload import Workload

EDGE = 1_800_000_000.0  # a multiple of the window
LIMIT, WINDOW = 10, 10.0
# 10 requests at 9 s, 6 at 15 s: the counter weighs the 10 by half and admits 5 more; the
# exact window still holds all 10 and refuses the 6
CROWDED = [EDGE + 9] * 10 + [EDGE + 15] * 6
# 10 at 0.5 s, 5 at 12 s: the counter weighs the 10 by 0.8 and admits 2; the exact window
# has let them slide out and admits all 5
FADED = [EDGE + 0.5] * 10 + [EDGE + 12] * 5


def tally(times: list[float]) -> Tally:
    found = Tally()
    exact = decide("sliding-window", LIMIT, WINDOW, times)
    found.add(exact, decide("sliding-counter", LIMIT, WINDOW, times))
    return found


def test_the_counters_error_on_a_constructed_workload() -> None:
    crowded, faded = tally(CROWDED), tally(FADED)
    assert (crowded.wrongly_allowed, crowded.wrongly_limited) == (5, 0)
    assert (faded.wrongly_allowed, faded.wrongly_limited) == (0, 3)
    both = Tally()
    for times in (CROWDED, FADED):
        exact = decide("sliding-window", LIMIT, WINDOW, times)
        both.add(exact, decide("sliding-counter", LIMIT, WINDOW, times))
    shares = both.to_json()
    assert shares["wrong_share"] == 8 / 31
    assert shares["net_excess_share"] == (5 - 3) / 31
    assert (both.sources_wrong, both.sources_limited_exact, both.sources_only_limited) == (2, 1, 1)


def test_the_lua_limiters_decide_as_their_models(space: Space) -> None:
    kept = Histories()
    for kind in ("sliding-window", "sliding-counter", "fixed-window"):
        for number, times in enumerate((CROWDED, FADED)):
            modelled = decide(kind, LIMIT, WINDOW, times)
            decided = on_lua(space, kind, times, f"s{number}", kept, limit=LIMIT, window=WINDOW)
            assert decided == modelled
    # each limiter's decisions, as a history its own policy's checker finds nothing wrong in
    for kind, limiter in LUA.items():
        history = kept.named[f"accuracy/{limiter}"]
        assert [op.outcome == "allowed" for op in history.operations] == [
            *decide(kind, LIMIT, WINDOW, CROWDED),
            *decide(kind, LIMIT, WINDOW, FADED),
        ]
        assert {op.key for op in history.operations} == {"s0", "s1"}
        assert history.ttls
        assert all(ttl > 0 for ttl in history.ttls.values())
        assert check(history.operations, history.policy, history.ttls).valid


def test_a_seeded_workload_is_compared_whole(space: Space) -> None:
    workload = Workload(sources=40, windows=3, seed=7)
    kept = Histories()
    found = compare(space, workload, 100, 3, kept)
    counter = found["against_exact"]["sliding-counter"]
    assert counter["requests"] == sum(len(t) for t in workload.sources_arrivals())
    assert counter["sources"] == 40
    assert found["on_redis"]["sources"] == 3
    assert set(found["on_redis"]["disagreements"].values()) == {0}
    assert sorted(kept.named) == [f"accuracy/{name}" for name in sorted(LUA.values())]
    decided = found["on_redis"]["decisions"] / len(LUA)
    assert all(len(history.operations) == decided for history in kept.named.values())
    none_on_redis = Histories()
    alone = compare(space, workload, 100, 0, none_on_redis)
    assert alone["against_exact"] == found["against_exact"]
    assert not none_on_redis.named
