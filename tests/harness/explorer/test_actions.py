import pytest

from ratelimit_harness.harness.explorer.schedule.actions import (
    KINDS,
    Action,
    Advance,
    Crash,
    Skew,
    Step,
    Through,
    from_json,
    to_json,
)

EVERY_KIND: list[Action] = [
    Step(0, "user:1"),
    Step(0, "user:1", 3),
    Through(1, "user:2"),
    Through(1, "user:2", 2),
    Advance(9.99),
    Crash(1),
    Skew(0, -5.0),
]


def test_a_request_of_cost_1_is_written_as_before_costs_existed() -> None:
    assert to_json(Step(0, "user:1")) == {"action": "step", "instance": 0, "identity": "user:1"}
    assert to_json(Step(0, "user:1", 3))["cost"] == 3


def test_every_kind_of_action_is_covered() -> None:
    assert {type(action) for action in EVERY_KIND} == set(KINDS.values())


@pytest.mark.parametrize("action", EVERY_KIND)
def test_an_action_survives_a_trace_file(action: Action) -> None:
    assert from_json(to_json(action)) == action
