from harness.study.accuracy import Tally, compare, decide, on_lua
from harness.study.space import Space
from harness.study.workload import Workload

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
    for kind in ("sliding-window", "sliding-counter", "fixed-window"):
        for number, times in enumerate((CROWDED, FADED)):
            modelled = decide(kind, LIMIT, WINDOW, times)
            assert on_lua(space, kind, times, f"s{number}", limit=LIMIT, window=WINDOW) == modelled


def test_a_seeded_workload_is_compared_whole(space: Space) -> None:
    workload = Workload(sources=40, windows=3, seed=7)
    found = compare(space, workload, 100, on_redis=3)
    counter = found["against_exact"]["sliding-counter"]
    assert counter["requests"] == sum(len(t) for t in workload.sources_arrivals())
    assert counter["sources"] == 40
    assert found["on_redis"]["sources"] == 3
    assert set(found["on_redis"]["disagreements"].values()) == {0}
    assert compare(space, workload, 100, on_redis=0)["against_exact"] == found["against_exact"]
