"""One identity's policy judged as its operations come, in bounded memory.

The checkers judge an identity's operations all at once, so an identity hammered for hours needs
memory for every one of them. ``IdentityStream`` takes them a batch at a time, in order of invoke,
and finds the same over-admissions and wrongful rejections, with the same witnesses (the tests
and ``property_tests/test_streamed_identity.py`` hold it to the checkers). It keeps only what a
later operation can still change: O(the operations of a few windows, and those in flight),
whatever the history's length.

- aligned fixed windows: over-admission by ``fixed``, wrongful rejection by
  ``rejections``;
- the sliding counter: over-admission as aligned fixed windows', wrongful rejection by
  ``rejections``;
- a sliding window, a token bucket and GCRA: over-admission by ``placement`` (which
  gives up where one may be found), wrongful rejection by ``rejections`` (a bucket's
  room by ``bucket``).

Some histories need the whole identity, and ``NotStreamable`` says why: another policy (a leaky
bucket, windows started by admissions, a block, attempts counted, a composite), a weighted
request or a give-back, operations out of order of invoke, or what each kind's stream says. The
caller then judges the identity whole.
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Callable, Collection, Sequence

from ratelimit_harness.harness.checkers.compose.table import OVER, WRONG
from ratelimit_harness.harness.checkers.placement.rules import SlidingWindow, TokenBucket
from ratelimit_harness.harness.checkers.shared.edges import least_apart
from ratelimit_harness.harness.checkers.shared.kinds import ALIGNED, BUCKETS
from ratelimit_harness.harness.checkers.stream.bucket import BucketRoom
from ratelimit_harness.harness.checkers.stream.common import Found, NotStreamable
from ratelimit_harness.harness.checkers.stream.fixed import FixedWindowOver
from ratelimit_harness.harness.checkers.stream.placement import PlacedOver
from ratelimit_harness.harness.checkers.stream.rejections import (
    CounterRoom,
    FixedRoom,
    Rejections,
    Room,
    SlidingRoom,
)
from ratelimit_harness.harness.checkers.view.timeline import bucket_params, window_params
from ratelimit_harness.harness.history import Operation, Outcome
from ratelimit_harness.limiters.policy import Policy

STREAMED = (*ALIGNED, "sliding-window", "sliding-counter", *BUCKETS)
_INVOKE, _COST, _REFUND = (operator.itemgetter(i) for i in (2, 7, 8))  # of an Operation


def streamable(policy: Policy) -> bool:
    """Whether ``policy``'s findings can be judged as a stream: plain aligned fixed windows, a
    sliding window, the sliding counter, a token bucket or GCRA."""
    return (
        policy.promise in STREAMED
        and not policy.block
        and policy.count != "attempts"
        and not policy.limits
    )


def not_streamable(policy: Policy) -> str:
    """Why ``policy``'s findings are not judged as a stream."""
    return f"{policy} is judged on the whole identity"


def _whatever_first(room: Room) -> Callable[[float], Room]:
    """A window policy's room, which needs not the identity's first invoke."""
    return lambda first: room


class IdentityStream:
    """One identity's operations, judged as they come (``add``) and found at the end
    (``finish``). ``kinds``: those of ``OVER`` and ``WRONG`` to judge."""

    def __init__(self, key: str, policy: Policy, kinds: Collection[str] = (OVER, WRONG)) -> None:
        if not streamable(policy):
            raise NotStreamable(not_streamable(policy))
        over: FixedWindowOver | PlacedOver
        room: Callable[[float], Room]  # from the identity's first invoke
        if policy.promise in BUCKETS:
            capacity, rate = bucket_params(policy)
            over = PlacedOver(TokenBucket(capacity, rate))
            room = functools.partial(BucketRoom, capacity, rate)
        else:
            limit, window = window_params(policy)
            if policy.promise in ALIGNED:
                over = FixedWindowOver(key, (limit, window, policy.origin(key)))
                room = _whatever_first(FixedRoom(limit, window, policy.origin(key)))
            elif policy.promise == "sliding-counter":  # over-admission: as aligned windows'
                over = FixedWindowOver(key, (limit, window, policy.origin(key)))
                room = _whatever_first(CounterRoom(limit, window))
            else:
                over = PlacedOver(SlidingWindow(limit, least_apart(window)))
                room = _whatever_first(SlidingRoom(limit, window))
        self.key = key
        self.over = over if OVER in kinds else None
        self.room = room if WRONG in kinds else None
        self.wrong: Rejections | None = None  # from the first operation
        self.latest = -math.inf  # the latest invoke so far

    def add(self, numbers: Sequence[int], ops: Sequence[Operation]) -> None:
        """The next operations, on lines ``numbers``, in order of invoke (none invoked before
        the last one added)."""
        if not ops:
            return
        invokes = list(map(_INVOKE, ops))
        if invokes[0] < self.latest or not all(map(operator.le, invokes, invokes[1:])):
            raise NotStreamable("its operations are not in order of invoke")
        if any(cost != 1 for cost in map(_COST, ops)) or any(map(_REFUND, ops)):
            raise NotStreamable("a request is weighted or given back")
        self.latest = invokes[-1]
        if self.room and not self.wrong:
            self.wrong = Rejections(self.key, self.room(invokes[0]))
        if self.over:
            for number, op in zip(numbers, ops, strict=True):
                if op.outcome is Outcome.ALLOWED:
                    self.over.add(number, op)
        if self.wrong:
            self.wrong.add(numbers, ops, self.latest)

    def finish(self) -> Found:
        """Each kind found: its count and its first witnesses, as the checkers list them."""
        found: Found = {}
        for kind, judged in ((OVER, self.over), (WRONG, self.wrong)):
            if judged:
                count, witnesses = judged.finish()
                if count:
                    found[kind] = (count, witnesses)
        return found
