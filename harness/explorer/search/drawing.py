"""How Hypothesis draws a schedule: which instance goes next, which identity it asks for, and
where the nemesis strikes, each choice made from what is enabled at that point, so that the
schedule is data: reproducible, and shrinkable to the shortest that still fails.

Time moves by amounts that matter to the policy: a hair, to just before, at and just after the
next window boundary, half a window, a window, several (long idle); skews are of the sizes.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, replace

from hypothesis import strategies as st

from ratelimit_harness.harness.errors import BadArgument
from ratelimit_harness.harness.explorer.schedule.actions import Action, Advance, Step, Through
from ratelimit_harness.harness.explorer.schedule.faults import FAULTS
from ratelimit_harness.harness.explorer.schedule.run import Run
from ratelimit_harness.limiters import Policy

HAIR = 0.01  # the smallest step of time: well above a deadline's uncertainty (keys.LATE)
# how often each kind of move is drawn, relative to the others and to the faults' own weights
# (faults.FAULTS): single round trips are rare, as the sweep has tried the interleavings with one
# preemption. Measured over 8 seeds (on one identity), this took the slowest flaw (a sliding
# counter under clock skew) from a median of 547 schedules to 108; the medians of the others
# moved by 10 schedules or less.
WEIGHTS = {"step": 1, "through": 3, "later": 3, "advance": 2}


GIVE_BACKS = (True, False)  # every other admitted request given back, starting with instance 0's


@dataclass(frozen=True)
class Space:
    """What a schedule may contain."""

    identities: tuple[str, ...] = ("user:1", "user:2")
    nemeses: tuple[str, ...] = tuple(FAULTS)  # the faults a schedule may use (faults.FAULTS)
    max_actions: int = 24
    max_skew: float | None = None  # seconds: skews larger than this are not drawn
    costs: tuple[int, ...] = (1,)  # what a request may cost: one of these, drawn per request
    # which admitted requests are given back: instance n's request k when
    # give_backs[(n + k) % len(give_backs)] (``Setup.give_backs``)
    give_backs: tuple[bool, ...] = (False,)

    @staticmethod
    def period(policy: Policy) -> float:
        """The time scale of the policy: its window, or the time to refill the bucket (a
        composite's longest)."""
        if policy.limits:
            return max(map(Space.period, policy.limits))
        if policy.window is not None:
            return policy.window
        assert policy.rate is not None
        return (policy.capacity or 1) / policy.rate

    @staticmethod
    def edge(policy: Policy, now: float) -> float:
        """Seconds from ``now`` to the next window boundary. A window started by an admission
        (``anchor=first``) ends a window after it: the boundary is a window from now, which a
        window started now, or a hair ago and a hair less, ends at. A composite's next is
        the nearest of its limits'; windows each identity shifts (``phase``), the nearest of
        the identities' a schedule draws by default."""
        if policy.limits:
            return min(Space.edge(limit, now) for limit in policy.limits)
        w = Space.period(policy)
        if policy.anchor == "first":
            return w
        origins = {0.0}
        if policy.phase != "none":  # each identity's windows start at an origin of its own
            origins = {policy.origin(identity) for identity in Space.identities}
        return min((math.floor((now - o) / w + 1e-9) + 1) * w + o - now for o in origins)

    def advances(self, policy: Policy, now: float) -> list[float]:
        """A hair; to just before, at and just after the next window boundary (the instants
        where windows, TTLs and refills turn); three windows (long idle)."""
        w, boundary = self.period(policy), self.edge(policy, now)
        near = [boundary - HAIR, boundary, boundary + HAIR] if boundary > HAIR else [boundary]
        return [HAIR, *near, 3 * w]

    def draw_advance(self, data: st.DataObject, run: Run) -> Advance:
        """Time passing by one of ``advances``, to the millisecond (the server's resolution)."""
        amounts = self.advances(run.setup.policy, run.time.now)
        return Advance(round(data.draw(st.sampled_from(amounts)), 3))

    def draw_cost(self, data: st.DataObject, run: Run, instance: int) -> int:
        """What the request ``instance`` starts costs: one of ``costs`` (nothing is drawn when
        there is one, or when the instance is inside a request and starts none)."""
        if len(self.costs) == 1 or run.busy(instance):
            return self.costs[0]
        return data.draw(st.sampled_from(self.costs))

    def skews(self, policy: Policy) -> list[float]:
        """A window and half a window either way; with ``max_skew`` below those, that bound
        either way instead."""
        w = self.period(policy)
        bound = math.inf if self.max_skew is None else self.max_skew
        sizes = {min(w, bound), min(w / 2, bound)}
        return [sign * size for size in sorted(sizes, reverse=True) if size > 0 for sign in (1, -1)]


def parse_costs(text: str) -> tuple[int, ...]:
    """``--costs``: what a request may cost, whole numbers from 1, comma-separated."""
    try:
        costs = tuple(dict.fromkeys(int(part) for part in text.split(",")))
    except ValueError:
        costs = ()
    if not costs or min(costs) < 1:
        raise BadArgument(f"--costs must be whole numbers from 1, comma-separated, not {text!r}")
    return costs


def space_for(nemesis: str | Iterable[str] | None, max_skew: float | None) -> Space:
    """The schedule space for ``--nemesis`` (``none``, or some of ``FAULTS`` by comma; None:
    all) and ``--max-skew`` (seconds; 0: no skew); BadArgument for what it cannot honour."""
    if isinstance(nemesis, str):
        names = () if nemesis == "none" else tuple(n.strip() for n in nemesis.split(","))
    else:
        names = tuple(FAULTS) if nemesis is None else tuple(nemesis)
    unknown = sorted(set(names) - set(FAULTS))
    if unknown:
        known = ", ".join(FAULTS)
        raise BadArgument(
            f"unknown nemesis {', '.join(unknown)}; known: none, or some of {known} "
            "(time passing between requests is always drawn)"
        )
    if max_skew is not None and not (max_skew >= 0 and math.isfinite(max_skew)):
        raise BadArgument(f"--max-skew must be 0 or more seconds, not {max_skew}")
    if max_skew == 0:
        names = tuple(name for name in names if name != "skew")
    return Space(nemeses=tuple(dict.fromkeys(names)), max_skew=max_skew)


def draw_swarm(data: st.DataObject, space: Space) -> Space:
    """What one schedule may use (swarm testing): each of the nemesis' faults or not, and
    the first one or more identities. A schedule without crashes has room for more time
    passing; one on a single key for more races on it; one on two keys can show keys that
    two identities share."""
    allowed = tuple(kind for kind in space.nemeses if data.draw(st.booleans()))
    keys = data.draw(st.integers(1, len(space.identities)))
    return replace(space, identities=space.identities[:keys], nemeses=allowed)


@dataclass(frozen=True)
class _Drawing:
    """A schedule being drawn, as the faults see it (``faults.Drawing``)."""

    run: Run
    space: Space

    @property
    def instances(self) -> int:
        return len(self.run.slots)

    @property
    def identities(self) -> tuple[str, ...]:
        return self.space.identities

    def advance(self, data: st.DataObject) -> Advance:
        return self.space.draw_advance(data, self.run)

    def cost(self, data: st.DataObject, instance: int) -> int:
        return self.space.draw_cost(data, self.run, instance)

    def skews(self) -> list[float]:
        return self.space.skews(self.run.setup.policy)


def draw_opening(data: st.DataObject, run: Run, space: Space) -> list[Action]:
    """What the schedule's faults do before its first action (clocks already apart)."""
    drawing = _Drawing(run, space)
    return [action for name in space.nemeses for action in FAULTS[name].opening(data, drawing)]


def draw_actions(data: st.DataObject, run: Run, space: Space) -> list[Action]:
    """The next action, or two: "later" is time passing, then a whole request; a fault may
    draw more than one (see faults). Time passes while an instance is inside a request only if
    the schedule may stall. Nothing when no instance can go on."""
    enabled = list(run.enabled())
    if not enabled:
        return []
    timed = ["later", "advance"] if "stall" in space.nemeses or not run.inside() else []
    weights = {**WEIGHTS, **{name: FAULTS[name].weight for name in space.nemeses}}
    kinds = ["step", "through", *timed, *space.nemeses]
    kind = data.draw(st.sampled_from([k for k in kinds for _ in range(weights[k])]))
    if kind in FAULTS:
        return FAULTS[kind].draw(data, _Drawing(run, space), enabled)
    if kind == "advance":
        return [space.draw_advance(data, run)]
    passing = [space.draw_advance(data, run)] if kind == "later" else []
    instance = data.draw(st.sampled_from(enabled))
    identity = data.draw(st.sampled_from(space.identities))
    cost = space.draw_cost(data, run, instance)
    if kind == "step":
        return [Step(instance, identity, cost)]
    return [*passing, Through(instance, identity, cost)]
