"""A limiter raced as an OS process on the line protocol gets the verdicts of the same limiter
raced in the explorer's own process: the same flaws, needing the same faults."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ratelimit_harness.harness.explorer.campaign import Target, race_policy, run_row
from ratelimit_harness.harness.explorer.instances.process import POOL
from ratelimit_harness.harness.provision import RedisServer
from ratelimit_harness.limiters import CATALOGUE
from ratelimit_harness.limiters.program import EXEC

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(autouse=True)
def no_programs_left() -> Iterator[None]:
    yield
    POOL.close()


def as_program(name: str) -> str:
    return EXEC + shlex.join(
        [sys.executable, "-m", "ratelimit_harness.limiters.line_program", name]
    )


@pytest.mark.parametrize(
    "name", ["naive-get-set", "fixed-window-incr-expire", "token-bucket-client-clock", "gcra-lua"]
)
def test_a_line_protocol_twin_gets_the_same_verdicts(
    virtual_server: RedisServer, tmp_path: Path, name: str
) -> None:
    entry = CATALOGUE[name]
    expected = tuple(str(flaw) for flaw in entry.flaws)
    rows = []
    for limiter in (name, as_program(name)):
        target = Target(name, limiter, race_policy(entry.policy), expected)
        out = tmp_path / ("program" if limiter.startswith(EXEC) else "thread")
        out.mkdir()
        row = run_row(
            target,
            stress_seconds=0,
            url=virtual_server.url,
            clock_file=virtual_server.clock_file,
            instances=2,
            max_examples=100,
            seed=1,
            out_dir=out,
            on_example=lambda _: None,
        )
        rows.append(row)
    thread, program = rows
    assert program.found_flaws == thread.found_flaws == sorted(expected)
    assert [s.needs for s in program.searches] == [s.needs for s in thread.searches]
    assert not program.replays_that_failed
