"""The catalogue raced through the pytest plugin, with the engine behind ``make race-test``: one
test per limiter and expected flaw (each search looks for that flaw and must find it, and
nothing the catalogue does not expect), one ``clean`` test per correct limiter (no violation),
and the boundary attack (fixed-window-lua judged by the sliding window of its limit). A search
for a flaw has ``--race-profile``'s budget, as race-test's: quick unless told thorough. A clean
case races ``CLEAN_SCHEDULES``: it shows the plugin's way to a clean result, while race-test
races each correct limiter with the whole budget (CI runs both)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ratelimit_harness.harness.explorer.campaign import Target, targets
from ratelimit_harness.harness.pytest_plugin import RaceResult

pytestmark = [pytest.mark.integration, pytest.mark.slow]  # make race-test races the same
CLEAN_SCHEDULES = 150  # a quarter of race-test's quick budget for a correct limiter


def _cases() -> list[object]:
    cases: list[object] = []
    for target in targets():
        name = target.label.replace(" ", "-")
        flaws = target.expected or (None,)
        cases += [pytest.param(target, f, id=f"{name}-{f or 'clean'}") for f in flaws]
    return cases


@pytest.mark.parametrize(("target", "flaw"), _cases())
def test_catalogue(race: Callable[..., RaceResult], target: Target, flaw: str | None) -> None:
    result = race(
        target.limiter,
        target.policy,
        flaw=flaw,
        judge_by=target.judged_by,
        costs=target.costs,
        give_back=any(target.give_backs),
        max_examples=CLEAN_SCHEDULES if flaw is None else None,
    )
    if flaw is None:
        assert result.clean, result
    else:
        assert flaw in result.flaws, result
        assert result.flaws <= set(target.expected), result
