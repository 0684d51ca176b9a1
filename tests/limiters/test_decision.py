from dataclasses import dataclass

import pytest

from ratelimit_harness.limiters import Decision


def test_decodes_a_script_reply_in_microseconds() -> None:
    reply = [1, 4, 1_500_000, 0, 1_700_000_000_500_000]
    decision = Decision.from_script(reply, limit=5)
    assert decision == Decision(True, 4, 5, 1_700_000_002.0, 0.0, 1_700_000_000.5, 0.0)


def test_decodes_a_delay_when_the_script_gives_one() -> None:
    assert Decision.from_script([1, 0, 300_000, 0, 0, 200_000], limit=3).delay == 0.2


@dataclass
class Verdict:
    allowed: bool
    remaining: int


def test_adapts_what_a_plugged_in_limiter_returns() -> None:
    assert Decision.from_user(True) == Decision(allowed=True)
    assert Decision.from_user(Verdict(False, 0)) == Decision(allowed=False, remaining=0)


def test_refuses_a_result_it_cannot_read() -> None:
    with pytest.raises(TypeError, match=r"expected a bool or an object with \.allowed"):
        Decision.from_user("yes")
