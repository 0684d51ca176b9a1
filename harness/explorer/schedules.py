"""How Hypothesis draws a schedule: which instance goes next, which identity it asks for, and
where the nemesis strikes, each choice made from what is enabled at that point, so that the
schedule is data: reproducible, and shrinkable to the shortest that still fails.

Time moves by amounts that matter to the policy: a hair, half a window, to just before and
just after a window's end, several windows (long idle); skews are of the same sizes.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

from harness.explorer.actions import Action, Advance, Crash, Skew, Step, Through
from harness.explorer.run import Run
from limiters import Policy

HAIR = 0.01  # the smallest step of time: well above a deadline's uncertainty (keys.LATE)
STEP_WEIGHT = 4  # single steps drawn this many times as often as each fault or whole request


@dataclass(frozen=True)
class Space:
    """What a schedule may contain."""

    identities: tuple[str, ...] = ("user:1",)
    nemeses: tuple[str, ...] = ("advance", "crash", "skew")
    max_actions: int = 24

    @staticmethod
    def period(policy: Policy) -> float:
        """The time scale of the policy: its window, or the time to refill the bucket."""
        if policy.window is not None:
            return policy.window
        assert policy.rate is not None
        return (policy.capacity or 1) / policy.rate

    def advances(self, policy: Policy) -> list[float]:
        w = self.period(policy)
        return [HAIR, w / 2, w - HAIR, w, w + HAIR, 3 * w]

    def skews(self, policy: Policy) -> list[float]:
        w = self.period(policy)
        return [w, -w, w / 2, -w / 2]


def draw_action(data: st.DataObject, run: Run, space: Space) -> Action | None:
    enabled = list(run.enabled())
    if not enabled:
        return None
    kind = data.draw(st.sampled_from(["step"] * STEP_WEIGHT + ["through", *space.nemeses]))
    if kind == "advance":
        return Advance(data.draw(st.sampled_from(space.advances(run.setup.policy))))
    instance = data.draw(st.sampled_from(enabled))
    if kind == "crash":
        return Crash(instance)
    if kind == "skew":
        return Skew(instance, data.draw(st.sampled_from(space.skews(run.setup.policy))))
    identity = data.draw(st.sampled_from(space.identities))
    return Through(instance, identity) if kind == "through" else Step(instance, identity)
