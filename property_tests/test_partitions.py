"""A history judged in parts (``check_file``) gets the verdict ``check`` gives it whole.

The histories are the oracle test's (every outcome, unknown ones never completed, shared
instants, give-backs, weights), spread over more keys, some recording the Redis keys they touched
(a few shared, for collisions), with a key snapshot. Parts of a few hundred bytes split them
into many, so that keys, witnesses and latencies come from parts that must be joined.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from property_tests.test_checker_oracle import PROMISES, WEIGHTS, composites, histories, policies
from ratelimit_harness.harness.checkers import check
from ratelimit_harness.harness.checkers.partitions import check_file
from ratelimit_harness.harness.history import Operation, write_history
from ratelimit_harness.limiters import Policy


@st.composite
def spread(draw: st.DrawFn, history: list[Operation]) -> list[Operation]:
    """``history`` over up to six keys, some operations naming the Redis keys they touched."""
    spread = []
    for op in history:
        key = f"{op.key}{draw(st.integers(0, 2))}"
        touched = draw(st.sampled_from([(), (), (f"rl:{key}",), ("rl:shared",)]))
        spread.append(op._replace(key=key, keys=touched))
    return spread


snapshots = st.none() | st.dictionaries(
    st.sampled_from(["rl:a0", "rl:b1", "rl:shared"]), st.sampled_from([-1.0, 3.0, 1e6])
)


def judged_alike(history: list[Operation], policy: Policy, ttls: dict[str, float] | None) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder, "history.jsonl")
        write_history(path, history)
        whole = check(history, policy, ttls).to_json()
        parts = check_file(path, policy, ttls, workers=1, part_bytes=300).to_json()
    assert json.dumps(parts, sort_keys=True) == json.dumps(whole, sort_keys=True)


@settings(deadline=None, max_examples=300)
@given(data=st.data(), promise=st.sampled_from(PROMISES))
def test_a_history_judged_in_parts_gets_the_verdict_of_the_whole(
    data: st.DataObject, promise: str
) -> None:
    policy = data.draw(policies(promise))
    history = data.draw(histories(refunds=data.draw(st.booleans())).flatmap(spread))
    judged_alike(history, policy, data.draw(snapshots))


@settings(deadline=None, max_examples=100)
@given(data=st.data())
def test_weighted_and_composite_histories_judged_in_parts_get_the_verdict_of_the_whole(
    data: st.DataObject,
) -> None:
    policy = data.draw(composites | st.sampled_from(PROMISES).flatmap(policies))
    history = data.draw(histories(WEIGHTS).flatmap(spread))
    judged_alike(history, policy, None)
