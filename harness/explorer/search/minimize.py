"""How a failing schedule is shrunk: simplify its actions while it still fails.

Hypothesis' own shrinker works on the choices a schedule was drawn from, and a choice drawn
from what was enabled at its point means something else once an earlier one is gone: it took
seconds and often left actions around the ones that matter. This works on the actions
themselves, each of which means the same wherever it stands (a step of instance 1, time
passing 10 s):

- leave out one instance altogether;
- take out chunks of actions, halving the chunk down to single actions (delta debugging);
- make two moves in a row of one instance one whole request;
- fold one period of time passing into the one before or after it (0.01 s + 9.99 s is 10 s:
  the moment that mattered is kept, one action fewer);
- make each fault gentler, as the fault itself knows how (``faults``: a smaller clock skew).

All are repeated until none changes anything: no instance and no single action can go, no
two moves can be one request, no two periods of time passing can be one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Generic, TypeGuard, TypeVar

from ratelimit_harness.harness.explorer.schedule.actions import Action, Advance, Step, Through
from ratelimit_harness.harness.explorer.schedule.faults import Take

Outcome = TypeVar("Outcome")  # what running a schedule gives: for the explorer, run and verdict
Gentler = Callable[[list[Action], Take], bool]  # see faults.Fault.gentler


def minimize(
    actions: Sequence[Action],
    attempt: Callable[[list[Action]], Outcome],
    fails: Callable[[Outcome], bool],
    gentler: Sequence[Gentler] = (),
) -> Outcome | None:
    """The outcome of the shortest failing schedule these simplifications reach from
    ``actions``; None when ``actions`` itself does not fail again."""
    first = attempt(list(actions))
    if not fails(first):
        return None
    shrinking = _Shrinking(list(actions), first, attempt, fails)
    while (
        shrinking.leave_out()
        | shrinking.remove()
        | shrinking.join()
        | shrinking.fold()
        | any([soften(shrinking.actions, shrinking.take) for soften in gentler])
    ):
        pass
    return shrinking.best


class _Shrinking(Generic[Outcome]):
    def __init__(
        self,
        actions: list[Action],
        best: Outcome,
        attempt: Callable[[list[Action]], Outcome],
        fails: Callable[[Outcome], bool],
    ) -> None:
        self.actions, self.best, self.attempt, self.fails = actions, best, attempt, fails

    def take(self, candidate: list[Action]) -> bool:
        """Keep ``candidate`` if it still fails."""
        outcome = self.attempt(candidate)
        if not self.fails(outcome):
            return False
        self.actions, self.best = candidate, outcome
        return True

    def leave_out(self) -> bool:
        """Leave out everything one instance does (its moves, crash and skews)."""
        changed = False
        for instance in sorted({a.instance for a in self.actions if not isinstance(a, Advance)}):
            left = [a for a in self.actions if isinstance(a, Advance) or a.instance != instance]
            changed |= self.take(left)
        return changed

    def remove(self) -> bool:
        """Take out chunks of actions: big chunks first, then halves of them, down to one."""
        changed, chunk = False, max(len(self.actions) // 2, 1)
        while True:
            start = 0
            while start < len(self.actions):
                if self.take(self.actions[:start] + self.actions[start + chunk :]):
                    changed = True
                else:
                    start += chunk
            if chunk == 1:
                return changed
            chunk //= 2

    def join(self) -> bool:
        """Make two moves in a row of one instance a single whole request (a request split
        across two steps at an offset that chunks do not line up with is then one action,
        which ``remove`` can take out)."""
        changed, n = False, 0
        while n + 1 < len(self.actions):
            a, b = self.actions[n], self.actions[n + 1]
            if _moves(a, b) and self.take(
                [*self.actions[:n], Through(a.instance, a.identity, a.cost), *self.actions[n + 2 :]]
            ):
                changed = True
            else:
                n += 1
        return changed

    def fold(self) -> bool:
        """Fold one period of time passing into the next one, or into the one before."""
        changed, n = False, 0
        while True:
            rest = self.actions
            passing = [(i, action) for i, action in enumerate(rest) if isinstance(action, Advance)]
            if n + 1 >= len(passing):
                return changed
            (first, a), (second, b) = passing[n], passing[n + 1]
            both: list[Action] = [Advance(round(a.seconds + b.seconds, 3))]
            between, after = rest[first + 1 : second], rest[second + 1 :]
            if self.take(rest[:first] + between + both + after) or self.take(
                rest[:first] + both + between + after
            ):
                changed = True
            else:
                n += 1


def _moves(a: Action, b: Action) -> TypeGuard[Step | Through]:
    """Whether ``a`` and ``b`` are moves of the same instance for the same identity."""
    return (
        isinstance(a, Step | Through)
        and isinstance(b, Step | Through)
        and (a.instance, a.identity) == (b.instance, b.identity)
    )
