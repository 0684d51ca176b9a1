"""A failing schedule as a file (``harness.history.races.SavedRace``): enough to read it, and
to replay it against a fresh Redis."""

from __future__ import annotations

import os
from pathlib import Path

from ratelimit_harness.harness.checkers import Verdict
from ratelimit_harness.harness.errors import HarnessError
from ratelimit_harness.harness.explorer.schedule.actions import from_json, to_json
from ratelimit_harness.harness.explorer.schedule.run import RunResult, Setup, run_schedule
from ratelimit_harness.harness.history.races import SavedRace, shown
from ratelimit_harness.harness.rundir import keep_judged
from ratelimit_harness.limiters import Policy, name_of

ATTEMPTS = 3


class TraceError(HarnessError):
    """A trace file that cannot be read."""


def render(result: RunResult) -> list[str]:
    return shown(result.trace)


def save(path: str | os.PathLike[str], setup: Setup, result: RunResult, verdict: Verdict) -> None:
    SavedRace(
        limiter=name_of(setup.limiter),
        policy=str(setup.policy),
        judged_by=str(setup.judge),
        instances=setup.instances,
        violations=sorted(verdict.kinds),
        actions=[to_json(action) for action in result.actions],
        steps=result.trace,
        verdict=verdict,
        give_backs=setup.give_backs,
    ).write(path)
    # and what was judged, beside it, so that ``check RUN_DIR`` can judge it again
    history, ttls, where = result.history, result.ttls, Path(path)
    keep_judged(
        where.parent, where.stem, policy=setup.judge, history=history, ttls=ttls, verdict=verdict
    )


def load(path: str | os.PathLike[str]) -> SavedRace:
    """The race saved at ``path``, its policies and actions checked; TraceError if not."""
    try:
        saved = SavedRace.read(path)
        for policy in (saved.policy, saved.judged_by):
            Policy.parse(policy)
        for action in saved.actions:
            from_json(action)
    except OSError as error:
        raise TraceError(f"{path}: {error.strerror or error}") from None
    except (ValueError, KeyError, TypeError) as error:
        raise TraceError(f"{path}: not a trace file ({error})") from None
    return saved


def replay(
    saved: SavedRace, url: str, *, flush: bool = True, clock_file: str = ""
) -> tuple[RunResult, Verdict]:
    """Run the saved actions again and judge the new history (``flush`` and ``clock_file``:
    as ``Setup``'s). A void run (real time reached it) is run again, up to ``ATTEMPTS`` times
    in all."""
    policy, judged_by = Policy.parse(saved.policy), Policy.parse(saved.judged_by)
    actions = [from_json(action) for action in saved.actions]
    setup = Setup(
        saved.limiter,
        policy,
        saved.instances,
        url,
        judged_by,
        flush,
        clock_file,
        give_backs=saved.give_backs,
    )
    for _ in range(ATTEMPTS - 1):
        result, verdict = run_schedule(setup, actions)
        if not result.void:
            return result, verdict
    return run_schedule(setup, actions)
