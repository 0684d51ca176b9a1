"""The nemesis' faults, as parts: each says how a schedule draws it and how shrinking makes it
gentler; ``FAULTS`` is the one table of them (``--nemesis`` names its keys).

Without any fault a schedule still interleaves the instances' round trips and lets time pass
between requests: that is fault class "none". The faults add:

- crash: an instance dies, the command it was about to send never sent (a schedule that ends
  with an instance inside a request it has begun to send counts as one: it never comes back);
- stall: time passes while an instance is inside a request, between two of its round trips
  (a process paused by the garbage collector, a slow network);
- skew: an instance's clock is off: apart from the others when the schedule begins, or
  jumping during it.

What a run used is what ``Run`` records as it applies the actions (``RunResult.faults``), so a
find's fault classes are those of its shortest schedule. A new fault is one class here, one
entry in ``FAULTS``, and, if it needs a new kind of action, that action in ``actions``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

from hypothesis import strategies as st

from harness.explorer.actions import Action, Crash, Skew, Step

if TYPE_CHECKING:
    from harness.explorer.run import Run
    from harness.explorer.schedules import Space

Take = Callable[[list[Action]], bool]  # keep this schedule if it still fails; whether it did
SMALLEST_SKEW = 0.001  # seconds: skews are shrunk to the millisecond


class Fault(Protocol):
    name: str  # as --nemesis names it
    label: str  # as a report shows it
    weight: int  # how often a schedule that may use it draws it, against the others
    acts: tuple[type[Action], ...]  # the actions of its own, which ``apply`` applies

    def apply(self, run: Run, action: Action) -> None:
        """Strike: ``action`` (one of ``acts``) happens in ``run``."""
        ...

    def opening(self, data: st.DataObject, run: Run, space: Space) -> list[Action]:
        """What it does before the schedule's first action (nothing, mostly)."""
        ...

    def draw(self, data: st.DataObject, run: Run, space: Space, enabled: list[int]) -> list[Action]:
        """One strike of it, at this point of the schedule."""
        ...

    def gentler(self, actions: list[Action], take: Take) -> bool:
        """Try to keep the schedule failing with less of this fault; whether it changed."""
        ...


class _Plain:
    """A fault with no opening move and nothing to make gentler but leaving it out."""

    acts: tuple[type[Action], ...] = ()

    def apply(self, run: Run, action: Action) -> None:
        raise TypeError(f"{type(self).__name__} has no action of its own: {action}")

    def opening(self, data: st.DataObject, run: Run, space: Space) -> list[Action]:
        return []

    def gentler(self, actions: list[Action], take: Take) -> bool:
        return False


class CrashFault(_Plain):
    name = "crash"
    label = "crash"
    weight = 1
    acts: tuple[type[Action], ...] = (Crash,)

    def apply(self, run: Run, action: Action) -> None:
        assert isinstance(action, Crash)
        run.crash(action.instance)

    def draw(self, data: st.DataObject, run: Run, space: Space, enabled: list[int]) -> list[Action]:
        return [Crash(data.draw(st.sampled_from(enabled)))]


class StallFault(_Plain):
    """One round trip of an instance, then time passing while it waits to send the next."""

    name = "stall"
    label = "stall"
    weight = 2

    def draw(self, data: st.DataObject, run: Run, space: Space, enabled: list[int]) -> list[Action]:
        instance = data.draw(st.sampled_from(enabled))
        identity = data.draw(st.sampled_from(space.identities))
        return [Step(instance, identity), space.draw_advance(data, run)]


class SkewFault:
    name = "skew"
    label = "clock skew"
    weight = 2
    acts: tuple[type[Action], ...] = (Skew,)

    def apply(self, run: Run, action: Action) -> None:
        assert isinstance(action, Skew)
        run.jump(action.instance, action.seconds)

    def opening(self, data: st.DataObject, run: Run, space: Space) -> list[Action]:
        """Where each instance's clock stands when the schedule begins: machines' clocks are
        apart before anything happens, not only after a jump."""
        offsets = [0.0, *space.skews(run.setup.policy)]
        drawn = [(n, data.draw(st.sampled_from(offsets))) for n in range(len(run.slots))]
        return [Skew(n, seconds) for n, seconds in drawn if seconds]

    def draw(self, data: st.DataObject, run: Run, space: Space, enabled: list[int]) -> list[Action]:
        instance = data.draw(st.sampled_from(enabled))
        return [Skew(instance, data.draw(st.sampled_from(space.skews(run.setup.policy))))]

    def gentler(self, actions: list[Action], take: Take) -> bool:
        """Each skew as small as still fails, to the millisecond (a binary search: smaller
        skews are assumed to fail less)."""
        changed = False
        for n, action in enumerate(actions):
            if not isinstance(action, Skew):
                continue
            size, sign = round(abs(action.seconds) / SMALLEST_SKEW), 1 if action.seconds > 0 else -1
            low, high = 0, size  # low: known (or taken) not to fail; high: fails
            while high - low > 1:
                middle = (low + high) // 2
                smaller = replace(action, seconds=round(sign * middle * SMALLEST_SKEW, 3))
                if take([*actions[:n], smaller, *actions[n + 1 :]]):
                    high, changed = middle, True
                    actions = [*actions[:n], smaller, *actions[n + 1 :]]
                else:
                    low = middle
        return changed


_ALL: tuple[Fault, ...] = (CrashFault(), StallFault(), SkewFault())
FAULTS: dict[str, Fault] = {fault.name: fault for fault in _ALL}


STRIKES: dict[type[Action], Fault] = {act: fault for fault in FAULTS.values() for act in fault.acts}


def labels(faults: Sequence[str]) -> list[str]:
    """The fault classes as a report shows them; "none" for none."""
    return [FAULTS[name].label for name in sorted(faults)] or ["none"]


@dataclass(frozen=True)
class ClockSpread:
    """How far apart the instances' clocks were, at most, in a schedule."""

    seconds: float

    @staticmethod
    def of(actions: Sequence[Action], instances: int) -> ClockSpread:
        offsets, widest = [0.0] * instances, 0.0
        for action in actions:
            if isinstance(action, Skew):
                offsets[action.instance] += action.seconds
                widest = max(widest, max(offsets) - min(offsets))
        return ClockSpread(round(widest, 6))
