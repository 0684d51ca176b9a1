"""What Hypothesis draws from: time passing aimed at boundaries, clocks apart from the start."""

from collections.abc import Iterator

import pytest
import redis
from hypothesis import given
from hypothesis import strategies as st

from ratelimit_harness.harness.explorer.schedule.actions import Skew
from ratelimit_harness.harness.explorer.schedule.run import Run, Setup
from ratelimit_harness.harness.explorer.search.drawing import HAIR, Space, draw_opening
from ratelimit_harness.harness.provision import RedisServer
from ratelimit_harness.limiters import Policy

FIXED = Policy.parse("fixed-window:limit=1,window=10")


def test_time_passes_by_a_hair_to_around_the_next_boundary_or_for_long() -> None:
    space = Space()
    assert space.advances(FIXED, 1_800_000_000.0) == pytest.approx(
        [HAIR, 10 - HAIR, 10, 10 + HAIR, 30]
    )
    assert space.advances(FIXED, 1_800_000_004.0) == pytest.approx(
        [HAIR, 6 - HAIR, 6, 6 + HAIR, 30]
    )


def test_a_window_started_by_an_admission_is_reached_a_window_from_now() -> None:
    first = Policy.parse("fixed-window:limit=1,window=10,anchor=first")
    assert Space().advances(first, 1_800_000_004.0) == pytest.approx(
        [HAIR, 10 - HAIR, 10, 10 + HAIR, 30]
    )


def test_a_bucket_is_timed_by_its_refill() -> None:
    bucket = Policy.parse("token-bucket:capacity=2,rate=0.5")
    assert Space.period(bucket) == 4
    assert Space().skews(bucket) == [4, -4, 2, -2]


@pytest.fixture(scope="module")
def run(redis_server: RedisServer) -> Iterator[Run]:
    admin = redis.Redis.from_url(redis_server.url)
    run = Run(Setup("fixed-window-lua", FIXED, 3, redis_server.url), admin)
    yield run
    run.finish()
    admin.close()


@pytest.mark.integration
@given(st.data())
def test_clocks_start_apart_by_the_policys_skews(run: Run, data: st.DataObject) -> None:
    opening = draw_opening(data, run, Space())
    offsets = [action for action in opening if isinstance(action, Skew)]
    assert offsets == opening
    assert len({offset.instance for offset in offsets}) == len(offsets) <= 3
    assert all(offset.seconds in (10, -10, 5, -5) for offset in offsets)


@pytest.mark.integration
@given(st.data())
def test_clocks_start_together_when_skews_are_not_drawn(run: Run, data: st.DataObject) -> None:
    assert draw_opening(data, run, Space(nemeses=("stall", "crash"))) == []


def test_a_bound_on_skew_below_the_policys_skews_is_the_size_drawn() -> None:
    assert Space(max_skew=0.25).skews(FIXED) == [0.25, -0.25]
    assert Space(max_skew=7).skews(FIXED) == [7, -7, 5, -5]
