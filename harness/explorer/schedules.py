"""How Hypothesis draws a schedule: which instance goes next, which identity it asks for, and
where the nemesis strikes, each choice made from what is enabled at that point, so that the
schedule is data: reproducible, and shrinkable to the shortest that still fails.

Time moves by amounts that matter to the policy: a hair, to just before, at and just after the
next window boundary, half a window, a window, several (long idle); skews are of the sizes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hypothesis import strategies as st

from harness.explorer.actions import Action, Advance, Crash, Skew, Step, Through
from harness.explorer.run import Run
from limiters import Policy

HAIR = 0.01  # the smallest step of time: well above a deadline's uncertainty (keys.LATE)
# how often each kind of action is drawn, relative to the others: single round trips are rare,
# as the sweep has tried the interleavings with one preemption. Measured over 8 seeds (on one
# identity), this took the slowest flaw (a sliding counter under clock skew) from a median of
# 547 schedules to 108; the medians of the others moved by 10 schedules or less.
WEIGHTS = {"step": 1, "through": 3, "later": 3, "stall": 2, "advance": 2, "crash": 1, "skew": 2}


@dataclass(frozen=True)
class Space:
    """What a schedule may contain."""

    identities: tuple[str, ...] = ("user:1", "user:2")
    nemeses: tuple[str, ...] = ("advance", "crash", "skew")
    max_actions: int = 24
    max_skew: float | None = None  # seconds: skews larger than this are not drawn

    @staticmethod
    def period(policy: Policy) -> float:
        """The time scale of the policy: its window, or the time to refill the bucket."""
        if policy.window is not None:
            return policy.window
        assert policy.rate is not None
        return (policy.capacity or 1) / policy.rate

    def advances(self, policy: Policy, now: float) -> list[float]:
        """A hair; to just before, at and just after the next window boundary (the instants
        where windows, TTLs and refills turn); three windows (long idle)."""
        w = self.period(policy)
        boundary = (math.floor(now / w + 1e-9) + 1) * w - now
        near = [boundary - HAIR, boundary, boundary + HAIR] if boundary > HAIR else [boundary]
        return [HAIR, *near, 3 * w]

    def skews(self, policy: Policy) -> list[float]:
        w = self.period(policy)
        return [
            s for s in (w, -w, w / 2, -w / 2) if self.max_skew is None or abs(s) <= self.max_skew
        ]


def draw_swarm(data: st.DataObject, space: Space) -> Space:
    """What one schedule may use (swarm testing): each of the nemesis' faults or not, and
    the first one or more identities. A schedule without crashes has room for more time
    passing; one on a single key for more races on it; one on two keys can show keys that
    two identities share."""
    allowed = tuple(kind for kind in space.nemeses if data.draw(st.booleans()))
    keys = data.draw(st.integers(1, len(space.identities)))
    return Space(space.identities[:keys], allowed, space.max_actions, space.max_skew)


def draw_actions(data: st.DataObject, run: Run, space: Space) -> list[Action]:
    """The next action, or two: "later" is time passing, then a whole request; "stall" is one
    round trip, then time passing while the instance is between two commands (the pairs that
    time-dependent flaws are made of, drawn as one). Nothing when no instance can go on."""
    enabled = list(run.enabled())
    if not enabled:
        return []
    timed = ["later", "stall"] if "advance" in space.nemeses else []
    kinds = ["step", "through", *timed, *space.nemeses]
    kind = data.draw(st.sampled_from([k for k in kinds for _ in range(WEIGHTS[k])]))
    if kind in ("crash", "skew"):
        return [_fault(data, run, space, kind, enabled)]
    passing: list[Action] = []
    if kind in ("advance", "later", "stall"):
        amounts = space.advances(run.setup.policy, run.time.now)
        passing = [Advance(round(data.draw(st.sampled_from(amounts)), 6))]
        if kind == "advance":
            return passing
    instance = data.draw(st.sampled_from(enabled))
    identity = data.draw(st.sampled_from(space.identities))
    step: Action = Step(instance, identity)
    whole: Action = Through(instance, identity)
    compose: dict[str, list[Action]] = {
        "step": [step],
        "through": [whole],
        "later": [*passing, whole],
        "stall": [step, *passing],
    }
    return compose[kind]


def draw_offsets(data: st.DataObject, run: Run, space: Space) -> list[Skew]:
    """Where each instance's clock stands when the schedule begins: machines' clocks are
    apart before anything happens, not only after a jump (none when skews are not drawn)."""
    if "skew" not in space.nemeses:
        return []
    offsets = [0.0, *space.skews(run.setup.policy)]
    drawn = [(n, data.draw(st.sampled_from(offsets))) for n in range(len(run.slots))]
    return [Skew(n, seconds) for n, seconds in drawn if seconds]


def _fault(data: st.DataObject, run: Run, space: Space, kind: str, enabled: list[int]) -> Action:
    instance = data.draw(st.sampled_from(enabled))
    if kind == "crash":
        return Crash(instance)
    return Skew(instance, data.draw(st.sampled_from(space.skews(run.setup.policy))))
