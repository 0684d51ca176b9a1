"""States the bounded stage has reached, so that a schedule reaching one again stops there.

Two schedules often lead to the same *state*: the same keys in Redis with the same deadlines, the
same time, the same history so far, and every instance between requests having heard the same.
What follows from a state depends on nothing else, so the schedules that go on from it need to
run once (stateful search, as model checkers such as SPIN keep the states they have seen).

An instance's code is taken to be deterministic: what it does next follows from what it heard so
far, the replies Redis gave it and the clock readings it made (``InstanceClock.readings``), and
what its clock reads next, from its skew. Replay rests on the same assumption. A state is only
known where the explorer sees all of that: every instance a thread of the explorer's (not a
program), no thread of the limiter's own running beside them, on the explorer's own server
(where the keys and their deadlines can be read), with nothing sent by a client the explorer
cannot see.

Two instances on one identity are alike: swapping them (with what each heard and did) gives the
same future, so a state and its mirror image are one. The verdict does not ask which instance
made a request, only what it was told and when.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ratelimit_harness.harness.explorer.instances.thread import Instance
from ratelimit_harness.harness.explorer.server.keys import server_state

if TYPE_CHECKING:
    from ratelimit_harness.harness.explorer.schedule.run import Run


Spent = tuple[int, int, int]  # switches, faults, time moves: what reaching a state cost


@dataclass(frozen=True)
class Place:
    """Where a schedule is, beyond the run itself: requests begun by each instance, the last
    to step, and whether a fault left things unsettled (see bounded)."""

    started: tuple[int, ...]
    last: int
    unsettled: bool


@dataclass
class Visited:
    """The states reached so far, each with the least it cost to reach it."""

    symmetric: bool  # two instances on one identity: a state and its mirror image are one
    seen: dict[str, list[Spent]] = field(default_factory=dict)
    off: bool = False  # a client the explorer cannot see was found: states are not known

    def again(self, run: Run, place: Place, spent: Spent) -> bool:
        """Whether this state was reached before at no greater cost in any of the three: then
        every schedule from here ran from there (or is queued to). Else it is kept."""
        state = None if self.off else _state(run, place, self.symmetric)
        if state is None:
            return False
        costs = self.seen.setdefault(state, [])
        if any(all(a <= b for a, b in zip(cost, spent, strict=True)) for cost in costs):
            return True
        costs.append(spent)
        return False


def _state(run: Run, place: Place, symmetric: bool) -> str | None:
    """The run's state, every instance between requests, or None where the explorer cannot
    know all of it (see the module)."""
    if not _known(run):
        return None
    redis_state = server_state(run.admin)
    count = len(run.slots)
    orders = [tuple(range(count))]
    if symmetric and count == 2:
        orders.append((1, 0))
    shared = (run.time.now, redis_state, tuple(sorted(run.faults)), place.unsettled)
    # written out, so that states compare whatever their parts are (repr is exact for these)
    return min(repr((_seen_as(run, place, order), shared)) for order in orders)


def _known(run: Run) -> bool:
    return (
        bool(run.setup.clock_file)
        and all(isinstance(slot.instance, Instance) for slot in run.slots)
        and not run.background.actors
        and not run.unscheduled
        and not run.errors
    )


def _seen_as(run: Run, place: Place, order: tuple[int, ...]) -> tuple[object, ...]:
    """What each instance did and heard, and the history, with the instances numbered in
    ``order``: the n-th of ``order`` is called n."""
    renamed = {run.slots[old].instance.name: new for new, old in enumerate(order)}
    instances = tuple(
        (
            place.started[old],
            run.slots[old].dead,
            tuple(run.slots[old].heard),
            tuple(run.slots[old].instance.clock.readings),
            run.slots[old].instance.clock.skew,
        )
        for old in order
    )
    # in no order: operations at one instant are concurrent, and the checkers place them by
    # their times alone
    history = tuple(sorted(repr((renamed[op.process], *op[1:])) for op in run.history))
    last = order.index(place.last) if place.last >= 0 else -1
    return (instances, history, last)
