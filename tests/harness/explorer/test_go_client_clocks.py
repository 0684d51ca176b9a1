"""Go limiters on go-redis that decide by time.Now(), raced on the schedule's time with no
--allow-real-clock: their flaws are caught, each needing a fault that moves a clock, and with no
such fault (crashes only) they are clean. Before clocks were controlled below libc, Go's clock
stayed real: the GCRA was accused of a wrongful rejection needing no fault (its bucket never
refilled while the schedule's time moved 20 s)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ratelimit_harness.harness.explorer.instances.process import POOL
from ratelimit_harness.harness.explorer.schedule.run import Setup
from ratelimit_harness.harness.explorer.search.drawing import Space
from ratelimit_harness.harness.explorer.search.explore import explore
from ratelimit_harness.harness.provision import RedisServer
from ratelimit_harness.limiters import Policy
from ratelimit_harness.limiters.program import EXEC
from tests.limiters.go_programs import build

pytestmark = [pytest.mark.integration, pytest.mark.slow]
LIMITERS = {
    "gcra-client-clock": "gcra:capacity=2,rate=0.2",
    "fixed-window-client-second": "fixed-window:limit=2,window=10",
}
CLOCK_FAULTS = frozenset({"skew", "stall"})


@pytest.fixture(scope="module")
def go_programs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("go"))


@pytest.mark.parametrize("name", sorted(LIMITERS))
@pytest.mark.parametrize("seed", [1, 2])
def test_a_client_clock_limiter_is_caught_needing_a_clock_fault_and_clean_without(
    name: str, seed: int, go_programs: Path, virtual_server: RedisServer
) -> None:
    setup = Setup(
        f"{EXEC}{go_programs / name}",
        Policy.parse(LIMITERS[name]),
        2,
        virtual_server.url,
        clock_file=virtual_server.clock_file,
    )
    try:
        caught = explore(setup, max_examples=600, seed=seed)
        crashes = explore(setup, space=Space(nemeses=("crash",)), max_examples=300, seed=seed)
    finally:
        POOL.close()
    assert caught.found is not None, f"{name} not caught with seed {seed}"
    assert caught.errors == 0, caught.first_error
    assert caught.off_clock.count == 0, caught.off_clock.first
    assert caught.found.faults & CLOCK_FAULTS, (caught.kinds, caught.found.faults)
    assert crashes.found is None, crashes.found and crashes.found.trace
    assert crashes.errors == 0, crashes.first_error
