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

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from hypothesis import strategies as st

from ratelimit_harness.harness.explorer.schedule.actions import (
    Action,
    Advance,
    Crash,
    Skew,
    Step,
    Through,
)

Take = Callable[[list[Action]], bool]  # keep this schedule if it still fails; whether it did
SMALLEST_SKEW = 0.001  # seconds: skews are shrunk to the millisecond
# the sizes a skew is tried at with time moved (``_moved``), smallest first
LADDER = (0.001, 0.002, 0.003, 0.005, 0.01, 0.1, 1.0)


class Struck(Protocol):
    """What a fault strikes: the run, as far as a fault may change it."""

    def crash(self, instance: int) -> None: ...

    def jump(self, instance: int, seconds: float) -> None: ...


class Drawing(Protocol):
    """The schedule being drawn, as far as a fault draws from it."""

    @property
    def instances(self) -> int: ...

    @property
    def identities(self) -> tuple[str, ...]: ...

    def advance(self, data: st.DataObject) -> Advance:
        """Time passing, by an amount that matters to the policy now."""
        ...

    def cost(self, data: st.DataObject, instance: int) -> int:
        """What a request ``instance`` starts costs."""
        ...

    def skews(self) -> list[float]:
        """The clock skews that may be drawn, either way."""
        ...


class Fault(Protocol):
    name: str  # as --nemesis names it
    label: str  # as a report shows it
    weight: int  # how often a schedule that may use it draws it, against the others
    acts: tuple[type[Action], ...]  # the actions of its own, which ``apply`` applies

    def apply(self, run: Struck, action: Action) -> None:
        """Strike: ``action`` (one of ``acts``) happens in ``run``."""
        ...

    def opening(self, data: st.DataObject, drawing: Drawing) -> list[Action]:
        """What it does before the schedule's first action (nothing, mostly)."""
        ...

    def draw(self, data: st.DataObject, drawing: Drawing, enabled: list[int]) -> list[Action]:
        """One strike of it, at this point of the schedule."""
        ...

    def gentler(self, actions: list[Action], take: Take) -> bool:
        """Try to keep the schedule failing with less of this fault; whether it changed."""
        ...


class _Plain:
    """A fault with no opening move and nothing to make gentler but leaving it out."""

    acts: tuple[type[Action], ...] = ()

    def apply(self, run: Struck, action: Action) -> None:
        raise TypeError(f"{type(self).__name__} has no action of its own: {action}")

    def opening(self, data: st.DataObject, drawing: Drawing) -> list[Action]:
        return []

    def gentler(self, actions: list[Action], take: Take) -> bool:
        return False


class CrashFault(_Plain):
    name = "crash"
    label = "crash"
    weight = 1
    acts: tuple[type[Action], ...] = (Crash,)

    def apply(self, run: Struck, action: Action) -> None:
        assert isinstance(action, Crash)
        run.crash(action.instance)

    def draw(self, data: st.DataObject, drawing: Drawing, enabled: list[int]) -> list[Action]:
        return [Crash(data.draw(st.sampled_from(enabled)))]


class StallFault(_Plain):
    """One round trip of an instance, then time passing while it waits to send the next."""

    name = "stall"
    label = "stall"
    weight = 2

    def draw(self, data: st.DataObject, drawing: Drawing, enabled: list[int]) -> list[Action]:
        instance = data.draw(st.sampled_from(enabled))
        identity = data.draw(st.sampled_from(drawing.identities))
        return [Step(instance, identity, drawing.cost(data, instance)), drawing.advance(data)]


class SkewFault:
    name = "skew"
    label = "clock skew"
    weight = 2
    acts: tuple[type[Action], ...] = (Skew,)

    def apply(self, run: Struck, action: Action) -> None:
        assert isinstance(action, Skew)
        run.jump(action.instance, action.seconds)

    def opening(self, data: st.DataObject, drawing: Drawing) -> list[Action]:
        """Where each instance's clock stands when the schedule begins: machines' clocks are
        apart before anything happens, not only after a jump."""
        offsets = [0.0, *drawing.skews()]
        drawn = [(n, data.draw(st.sampled_from(offsets))) for n in range(drawing.instances)]
        return [Skew(n, seconds) for n, seconds in drawn if seconds]

    def draw(self, data: st.DataObject, drawing: Drawing, enabled: list[int]) -> list[Action]:
        instance = data.draw(st.sampled_from(enabled))
        return [Skew(instance, data.draw(st.sampled_from(drawing.skews())))]

    def gentler(self, actions: list[Action], take: Take) -> bool:
        """Each skew as small as still fails, to the millisecond: first as the schedule stands
        (a binary search: smaller skews are assumed to fail less), then with time moved by what
        the skew gave up (``_moved``), so that a skew of a window at a window's start is tried
        as a millisecond at its end."""
        smaller, changed = _smaller(actions, take)
        moved = _moved(smaller, take)
        return changed or moved is not None


def _smaller(actions: list[Action], take: Take) -> tuple[list[Action], bool]:
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
    return actions, changed


def _moved(actions: list[Action], take: Take) -> list[Action] | None:
    """A skew breaks a clock-keyed limiter when it carries one instance's reading across a
    window's edge (or a bucket's refill) that the true time has not reached: how large it must
    be depends on how far from that edge the schedule stands. So for each skew, from the
    smallest size up (``LADDER``), try it with time moved by what the smaller skew gives up:
    that much more time passing somewhere the instances are between requests (and as much less
    in a later period, so that only what lies between moves), or that much less (or more) in
    one of the schedule's own periods, each also a millisecond either side
    (a decision within a millisecond of an edge is not judged). The first that still fails is
    taken; None if none did."""
    for n, action in enumerate(actions):
        if not isinstance(action, Skew):
            continue
        size, sign = abs(action.seconds), 1 if action.seconds > 0 else -1
        for smaller in (s for s in LADDER if s < size - SMALLEST_SKEW / 2):
            skewed = [*actions[:n], replace(action, seconds=sign * smaller), *actions[n + 1 :]]
            found = next((c for c in _time_moves(skewed, size - smaller) if take(c)), None)
            if found is not None:  # one skew at a time: the shrinker comes back for the next
                return found
    return None


def _time_moves(actions: list[Action], shift: float) -> Iterator[list[Action]]:
    amounts = [a for a in (shift - SMALLEST_SKEW, shift, shift + SMALLEST_SKEW) if a > 0]
    for n, action in enumerate(actions):
        if isinstance(action, Advance):
            for amount in amounts:
                for seconds in (action.seconds - amount, action.seconds + amount):
                    if seconds > 0:
                        yield [*actions[:n], Advance(round(seconds, 3)), *actions[n + 1 :]]
    for n in _between_requests(actions):
        for amount in amounts:
            yield [*actions[:n], Advance(round(amount, 3)), *actions[n:]]
            # or what follows, up to a later period, moved by that much: the period shorter
            for j in range(n, len(actions)):
                later = actions[j]
                if isinstance(later, Advance) and later.seconds > amount:
                    shorter = Advance(round(later.seconds - amount, 3))
                    yield [
                        *actions[:n],
                        Advance(round(amount, 3)),
                        *actions[n:j],
                        shorter,
                        *actions[j + 1 :],
                    ]


def _between_requests(actions: Sequence[Action]) -> list[int]:
    """The places in ``actions`` where no instance can be inside a request (time passing
    there stalls nobody): before the first action, and after each until an instance takes a
    single step, until that instance runs a request through."""
    places, stepping = [0], set()
    for n, action in enumerate(actions, start=1):
        if isinstance(action, Step):
            stepping.add(action.instance)
        elif isinstance(action, Through):
            stepping.discard(action.instance)
        if not stepping:
            places.append(n)
    return places


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
