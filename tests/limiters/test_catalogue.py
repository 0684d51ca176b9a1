import re
from importlib import resources

import pytest

from ratelimit_harness.limiters import CATALOGUE, KINDS, Flaw, Policy, PolicyError
from ratelimit_harness.limiters.base import RedisLimiter

REQUIRED_NAMES = {
    "naive-get-set": {"over-admission"},
    "colleague": {"over-admission"},
    "fixed-window-incr-expire": {"immortal-key"},
    "fixed-window-setnx-incr": {"immortal-key"},
    "fixed-window-lua": set(),
    "fixed-window-first-lua": set(),
    "sliding-log-pipeline": {"wrongful-rejection"},
    "sliding-log-lua": set(),
    "sliding-counter-mget-incr": {"over-admission"},
    "sliding-counter-lua": set(),
    "token-bucket-nonatomic": {"over-admission"},
    "token-bucket-client-clock": {"over-admission"},
    "token-bucket-lua": set(),
    "gcra-lua": set(),
    "leaky-bucket": set(),
    "in-memory": {"over-admission"},
    # past the chapter: several limits at once, and weighted requests
    "fixed-windows-lua": set(),
    "fixed-windows-two-trips": {"wrongful-rejection"},
    "token-bucket-weighted-lua": set(),
    "token-bucket-weighted-drain": {"wrongful-rejection"},
    # and requests given back
    "fixed-window-refund-get-set": {"over-admission", "immortal-key"},
    # and keys kept a thousand windows
    "fixed-window-expire-ms": {"excess-ttl", "immortal-key"},
    # and a block once over
    "fixed-window-block-lua": set(),
    "fixed-window-block-renewed": {"wrongful-rejection"},
    # and a log of every attempt
    "sliding-log-attempts-lua": set(),
    "sliding-log-pipeline-attempts": {"over-admission", "immortal-key"},
    # and windows each identity shifts
    "fixed-window-phase-lua": set(),
    "fixed-window-phase-ttl": {"over-admission"},
}


def test_names_are_exactly_the_chapters_catalogue() -> None:
    assert list(CATALOGUE) == list(REQUIRED_NAMES)


@pytest.mark.parametrize("name", REQUIRED_NAMES)
def test_each_entry_declares_the_chapters_flaws_with_reasons(name: str) -> None:
    entry = CATALOGUE[name]
    assert REQUIRED_NAMES[name] <= set(entry.flaws)
    assert REQUIRED_NAMES[name] == set() or entry.flaws  # correct ones stay flawless
    for flaw, reason in entry.flaws.items():
        assert isinstance(flaw, Flaw)
        assert re.search(r"\b(Part \d+|Problem \d+)", reason), reason
        assert "\n" not in reason
    if not REQUIRED_NAMES[name]:
        assert not entry.flaws


@pytest.mark.parametrize("name", REQUIRED_NAMES)
def test_each_entry_is_judged_by_a_policy_its_limiter_enforces(name: str) -> None:
    entry = CATALOGUE[name]
    policy = Policy.parse(entry.policy)
    assert all(limit.kind in KINDS for limit in policy.limits or (policy,))
    if isinstance(entry.factory, type) and issubclass(entry.factory, RedisLimiter):
        assert entry.factory.policy_kinds == (policy.promise,)


@pytest.mark.parametrize(
    ("name", "spec", "refusal"),
    [
        (
            "fixed-window-block-lua",
            "fixed-window:limit=5,window=2,anchor=first",
            "FixedWindowBlockLua enforces fixed-window:anchor=first policies with a block, "
            "not fixed-window:anchor=first without a block",
        ),
        (
            "fixed-window-first-lua",
            "fixed-window:limit=5,window=2,anchor=first,block=6",
            "FixedWindowFirstLua enforces fixed-window:anchor=first policies without a block, "
            "not fixed-window:anchor=first with a block",
        ),
        (
            "sliding-log-attempts-lua",
            "sliding-window:limit=5,window=2",
            "SlidingLogAttemptsLua enforces sliding-window policies counting attempts, "
            "not sliding-window counting admissions",
        ),
    ],
)
def test_a_limiter_given_a_policy_it_cannot_keep_says_what_differs(
    name: str, spec: str, refusal: str
) -> None:
    with pytest.raises(PolicyError) as error:
        CATALOGUE[name].build(None, Policy.parse(spec))
    assert str(error.value) == refusal


def test_every_lua_script_states_keys_argv_and_returns() -> None:
    files = resources.files("limiters").iterdir()
    scripts = [f for f in files if f.name.endswith(".lua") and f.name != "server_time.lua"]
    assert len(scripts) == 14
    for script in scripts:
        header = "\n".join(
            line for line in script.read_text().splitlines() if line.startswith("--")
        )
        assert "KEYS[1]" in header, script.name
        assert "ARGV[1]" in header, script.name
        assert "returns" in header, script.name
