"""The history as columns: the same operations, split by key the way the checkers read them."""

from __future__ import annotations

import math

from ratelimit_harness.harness.checkers.view.columns import OUTCOMES, Columns
from ratelimit_harness.harness.checkers.view.timeline import by_key
from tests.harness.checkers.factory import op


def test_columns_hold_each_field_with_nan_for_none() -> None:
    history = [op(1.0, 1.5, now=1.2), op(2.0, None, "unknown"), op(3.0, 3.25, "rejected")]
    columns = Columns.of(history)
    assert columns.invoke.tolist() == [1.0, 2.0, 3.0]
    assert columns.complete[[0, 2]].tolist() == [1.5, 3.25]
    assert math.isnan(columns.complete[1])
    assert columns.end.tolist() == [1.5, math.inf, 3.25]
    assert columns.decided_by.tolist() == [1.5, 2.0, 3.25]
    assert columns.now[0] == 1.2
    assert math.isnan(columns.now[2])
    assert [OUTCOMES[code] for code in columns.outcome] == [o.outcome for o in history]


def test_timelines_keep_keys_in_first_appearance_and_operations_in_file_order() -> None:
    history = [
        op(5.0, key="b"),
        op(1.0, key="a", outcome="rejected"),
        op(2.0, None, "unknown", key="b"),
        op(0.5, key="a"),
        op(3.0, key="b", outcome="error"),
        op(4.0, key="b"),
    ]
    lines = list(by_key(Columns.of(history)))
    assert [line.key for line in lines] == ["b", "a"]
    b, a = lines
    assert b.admitted == [history[0], history[5]]
    assert b.unknown == [history[2]]
    assert b.rejected == []
    assert b.maybe == [history[0], history[5], history[2]]
    assert b.maybe_at.tolist() == [0, 5, 2]
    assert a.admitted == [history[3]]
    assert a.rejected == [history[1]]


def test_an_empty_history_has_no_timelines() -> None:
    columns = Columns.of([])
    assert len(columns.invoke) == 0
    assert list(by_key(columns)) == []
