"""An identity's policy judged as a stream (``streamed_identity``) is judged as the checkers
judge it all at once: the same counts, the same first witnesses, for aligned fixed windows (with
and without a phase), sliding windows, the sliding counter, token buckets and GCRA. Where the
stream gives up (``NotStreamable``), it is for the reason it gives.

The histories are one identity's, in order of invoke, many near a window's edge, some never
completed; the stream keeps few windows and lets go of instants early, so that what it forgets
is forgotten often.
"""

from __future__ import annotations

import json
import math
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

import numpy as np
from hypothesis import event, given, settings
from hypothesis import strategies as st

from ratelimit_harness.harness.checkers import check
from ratelimit_harness.harness.checkers.partitions import check_file
from ratelimit_harness.harness.checkers.placement.rules import SlidingWindow, TokenBucket
from ratelimit_harness.harness.checkers.placement.search import greedy_drops_none
from ratelimit_harness.harness.checkers.policies import fixed_window
from ratelimit_harness.harness.checkers.shared.edges import EDGE, least_apart
from ratelimit_harness.harness.checkers.stream import common as streaming
from ratelimit_harness.harness.checkers.stream import fixed as streamed_fixed
from ratelimit_harness.harness.checkers.stream.busy import Streamed
from ratelimit_harness.harness.checkers.stream.common import NotStreamable
from ratelimit_harness.harness.checkers.stream.identity import IdentityStream
from ratelimit_harness.harness.checkers.view.timeline import bucket_params, window_params
from ratelimit_harness.harness.history import Operation, Outcome, write_history
from ratelimit_harness.limiters import Policy

START = 1_700_000_000.0
KINDS = ("over-admission", "wrongful-rejection")

policies = st.builds(
    lambda kind, limit, window: Policy.parse(f"{kind}:limit={limit},window={window}"),
    st.sampled_from(["fixed-window", "sliding-window", "sliding-counter"]),
    st.integers(1, 4),
    st.sampled_from([0.25, 0.5, 1, 2]),
)
phased = st.builds(
    lambda limit, window: Policy.parse(f"fixed-window:limit={limit},window={window},phase=crc32"),
    st.integers(1, 4),
    st.sampled_from([0.25, 0.5, 1, 2]),
)
buckets = st.builds(
    lambda kind, capacity, rate: Policy.parse(f"{kind}:capacity={capacity},rate={rate}"),
    st.sampled_from(["token-bucket", "gcra"]),
    st.integers(1, 4),
    st.sampled_from([1, 2.5, 4, 8]),
)
policies = policies | phased | buckets


@st.composite
def histories(draw: st.DrawFn, key: str = "user:1", most: int = 60) -> list[Operation]:
    """One identity's operations, in order of invoke: allowed ones mostly, some near an edge
    (of the quarter seconds every window here is made of), some failed (an error, known not to
    have counted), some never completed."""
    t = START + draw(st.floats(0, 1))
    ops = []
    for _ in range(draw(st.integers(1, most))):
        t += draw(st.sampled_from([0.0, 0.001, 0.01, 0.05, 0.2, 0.7]))
        invoke = t
        if draw(st.booleans()):  # within an edge of a quarter second
            invoke = round(t * 4) / 4 + draw(st.floats(-2 * EDGE, 2 * EDGE))
        t = max(t, invoke)
        outcome = draw(
            st.sampled_from(
                [Outcome.ALLOWED] * 3 + [Outcome.REJECTED] * 2 + [Outcome.ERROR, Outcome.UNKNOWN]
            )
        )
        latency = draw(st.sampled_from([0.0, 0.0005, 0.002, 0.03, 0.4, 1.3]))
        complete = None if outcome is Outcome.UNKNOWN and draw(st.booleans()) else t + latency
        ops.append(Operation(f"app-{draw(st.integers(1, 3))}", key, t, complete, outcome))
    return ops


@contextmanager
def forgetful(windows: int, admissions: int, forget_at: int) -> Iterator[None]:
    """The stream keeps ``windows`` windows and ``admissions`` admissions back, and lets go of
    instants once ``forget_at`` may go."""
    with (
        mock.patch.object(streamed_fixed, "KEPT_WINDOWS", windows),
        mock.patch.object(streamed_fixed, "KEPT_ADMISSIONS", admissions),
        mock.patch.object(streaming, "FORGET_AT", forget_at),
    ):
        yield


def streamed(history: list[Operation], policy: Policy, batch: int) -> dict[str, object]:
    stream = IdentityStream(history[0].key, policy)
    for first in range(0, len(history), batch):
        ops = history[first : first + batch]
        stream.add(range(first + 1, first + 1 + len(ops)), ops)
    return {k: (n, [w.to_json() for w in ws]) for k, (n, ws) in stream.finish().items()}


def found_whole(history: list[Operation], policy: Policy) -> dict[str, object]:
    verdict = check(history, policy)
    return {
        v.kind: (v.count, [w.to_json() for w in v.witnesses[:20]])
        for v in verdict.violations
        if v.kind in KINDS
    }


def needs_a_shift(history: list[Operation], policy: Policy) -> bool:
    """``fixed_window``'s own test for trying shifts of the edges: not matched as they are,
    matched with each admission on either side of an edge, and few enough shifts to try."""
    admitted = [op for op in history if op.outcome is Outcome.ALLOWED]
    origin = policy.origin(history[0].key)
    starts = np.array([op.invoke for op in admitted]) - origin
    ends = np.array([op.complete for op in admitted], dtype=np.float64) - origin
    limit, window = window_params(policy)
    shifts = fixed_window._shifts(np.concatenate((starts, ends)), window)
    return (
        not fixed_window._matched_quickly(starts, ends, limit, window)
        and fixed_window._matched_quickly(starts - EDGE, ends + EDGE, limit, window)
        and len(shifts) <= fixed_window.MAX_SHIFTS
    )


def placed_forwards(history: list[Operation], policy: Policy) -> bool:
    """``placement``'s first step on the whole: whether earliest deadline first, forwards,
    places every admission (if not, the later steps search the whole identity)."""
    admitted = [op for op in history if op.outcome is Outcome.ALLOWED]
    starts = np.array([op.invoke for op in admitted], dtype=np.float64)
    ends = np.array([op.complete for op in admitted], dtype=np.float64)
    if policy.kind == "sliding-window":
        limit, window = window_params(policy)
        return greedy_drops_none(starts, ends, SlidingWindow(limit, least_apart(window)))
    return greedy_drops_none(starts, ends, TokenBucket(*bucket_params(policy)))


@settings(deadline=None, max_examples=400)
@given(
    policy=policies,
    history=histories(),
    memory=st.tuples(st.integers(1, 4), st.integers(1, 12), st.integers(0, 3)),
    batch=st.integers(1, 8),
)
def test_a_stream_finds_what_the_checkers_find(
    policy: Policy, history: list[Operation], memory: tuple[int, int, int], batch: int
) -> None:
    """``memory``: the windows and admissions kept back, and the instants let go of at once."""
    expected = found_whole(history, policy)
    why = ""
    try:
        with forgetful(*memory):
            got = streamed(history, policy, batch)
    except NotStreamable as error:
        why = str(error)
    event(why or "streamed")
    event(f"{policy.kind} {'streamed' if not why else 'whole'}, found {sorted(expected)}")
    if "shift" in why:
        assert needs_a_shift(history, policy)
        return
    if "over the rule" in why:
        assert not placed_forwards(history, policy)
        return
    if why:
        assert "reaches back" in why
        with forgetful(math.inf, math.inf, memory[2]):  # type: ignore[arg-type]
            got = streamed(history, policy, batch)  # kept whole, it reaches back to what it needs
    assert json.dumps(got, sort_keys=True) == json.dumps(expected, sort_keys=True)


@settings(deadline=None, max_examples=100)
@given(
    policy=policies,
    busy=histories("user:busy", most=80),
    others=st.lists(histories("user:calm", most=3), max_size=3),
)
def test_a_busy_identity_judged_in_parts_as_a_stream_gets_the_verdict_of_the_whole(
    policy: Policy, busy: list[Operation], others: list[list[Operation]]
) -> None:
    history = sorted(
        busy + [op._replace(key=f"user:calm{n}") for n, ops in enumerate(others) for op in ops],
        key=lambda op: op.invoke,
    )
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder, "history.jsonl")
        write_history(path, history)
        whole = check(history, policy).to_json()
        parts = check_file(path, policy, workers=1, part_bytes=1_000).to_json()
    assert json.dumps(parts, sort_keys=True) == json.dumps(whole, sort_keys=True)


def test_the_busy_identity_of_those_histories_is_streamed() -> None:
    """The test above judges its busy identity as a stream (not whole, as before)."""
    busy = [
        Operation("app-1", "user:busy", START + n / 10, START + n / 10 + 0.01, Outcome.ALLOWED)
        for n in range(80)
    ]
    calls: list[bool] = []
    finish = Streamed.finish

    def spied(self: Streamed) -> object:
        found = finish(self)
        calls.append(True)
        return found

    with tempfile.TemporaryDirectory() as folder, mock.patch.object(Streamed, "finish", spied):
        path = Path(folder, "history.jsonl")
        write_history(path, busy)
        check_file(path, Policy.parse("fixed-window:limit=1,window=1"), workers=1, part_bytes=1_000)
    assert calls == [True]
