"""The verdict engine against an exact brute-force oracle, on small random histories.

The oracle is the specification (docs/verdicts.md, "What a verdict guarantees", each checker's
docstring), written as plainly as it can be: it tries placements one by one.

- Over-admission: a violation iff no placement of the admissions, each on an instant of its
  [invoke, complete], keeps the promise. Unknown operations are left out: no promise breaks by
  one admission fewer, so "not admitted" is always their benefit of the doubt. Except for
  windows started by admissions (``anchor=first``): there an admission can start a window early
  and so make room later, so each unknown one is left out or placed, whichever keeps it.
- Wrongful rejection: iff at every instant the rejection may have happened at, under every
  placement of the admissions and of the unknown operations (counted as admissions, an open
  one anywhere after its invoke), budget was left. Admissions at the rejection's own instant
  count before it (the order of one instant is unknown; that order hurts most). Windows
  started by admissions are taken in from the admissions up to the rejection, in every way the
  edge rule allows, however full; the rejection is right if in one of them its window is full;
  there an unknown operation may also be left out, as a window it starts can end too early.
- A weighted request (``Operation.cost`` n) is n admissions at one instant, and a rejection of
  one is right when n more would break the promise.
- A request given back (``Operation.refund``) stops counting at some instant of its give-back
  (for the windows: fixed, sliding, the sliding counter): against a rejection at t it counts
  only if its give-back may not have completed by t. It was never known to count at any one
  admission's instant, so over-admission leaves it out, as an unknown one. Under the other
  kinds it is an unknown one throughout (the checker honours give-backs for windows only).
- A composite policy's placement is one for all its limits: over-admission iff no placement
  keeps every limit; a rejection is right iff, in some placement, some limit had no room.
- The edge rule (``edges``): for the window kinds, what falls within EDGE of a window's edge
  counts on whichever side keeps the promise or makes the rejection right; for aligned windows'
  over-admission, one convention for every edge: all edges shifted alike by up to EDGE.
- A leaky bucket's placed instant is the departure; ``now``, when it was queued, is given. For
  over-admission only those with a ``now`` are known to have waited; against a rejection, an
  allowed operation without one may have been queued any time before it departed.

Why a grid of quarter seconds is exact: every interval's ends, every window boundary (windows of
0.5, 1 or 2 s), every ``now`` and every bucket step (1 / rate for rates of 0.5 to 4) lie on it
(for a rate of 8, a grid of eighths, on which the quarters lie too). A placement that keeps a
promise still keeps it with every instant rounded down to the grid: each promise compares
differences of two instants with grid multiples (the window an instant is in, a window's length,
(admissions - capacity) / rate), and rounding down keeps every such difference on its side (a
leaky bucket's departures only come earlier: fewer waiting). And a placement that makes a
rejection right stays right with the rejection as early as it can be once everything counted
against it may have happened, and each of those as late as it can up to then: all interval ends
or window boundaries, on the grid again. A bucket is judged exactly: one refilled over a span to
exactly one token has that token.

The edge rule keeps the grid exact. On it, an instant is within EDGE of an edge only when it is
on the edge, so for aligned windows a shift of the edges is "every instant on an edge counts in
the window before it" or "in the window after it", and an instant just before an edge, rounded
up to it rather than down (it lies in an interval whose end is on the grid), keeps its side. For
sliding windows and windows started by admissions, whether a placement exists for a given order
is a system of difference constraints (x - y >= window - EDGE, x - y <= window + EDGE, ...); it
has a solution iff no cycle weighs less than zero, and a cycle's weight is a grid multiple plus
at most 12 EDGE, far less than a quarter: so there is one iff there is one with EDGE 0, and then
there is one on the grid.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import replace
from itertools import product

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ratelimit_harness.harness.checkers import check
from ratelimit_harness.harness.checkers.shared.edges import EDGE
from ratelimit_harness.harness.checkers.view.timeline import bucket_params, window_params
from ratelimit_harness.harness.history import Operation, Outcome
from ratelimit_harness.limiters import Policy
from ratelimit_harness.limiters.policy import FIRST_ANCHORED, KINDS

GRID = 0.25
LATER = math.inf  # any instant after the one a rejection is judged at: they all count alike

PROMISES = [*KINDS, FIRST_ANCHORED]
# where the checker may say "inconclusive" (docs/verdicts.md), it may miss an over-admission
# when it says so
MAY_BE_INCONCLUSIVE = {"sliding-window", "token-bucket", "gcra", "leaky-bucket", FIRST_ANCHORED}


def grid(policy: Policy) -> float:
    """The grid the oracle places on: quarter seconds, eighths for a bucket step of 1/8 s."""
    if policy.limits:
        return min(map(grid, policy.limits))
    step = GRID if policy.rate is None else 1 / policy.rate
    return GRID if step % GRID == 0 else step


def on_grid(low: float, high: float, step: float = GRID) -> list[float]:
    return [n * step for n in range(round(low / step), round(high / step) + 1)]


def accepted(op: Operation) -> float:
    """When a leaky bucket queued ``op``, as hurts a rejection most: its ``now``; an unknown
    operation that never said, when it was invoked; an allowed one, before anything else."""
    if op.now is not None:
        return op.now
    return op.invoke if op.outcome is Outcome.UNKNOWN else -math.inf


def first_windows(xs: list[float], window: float) -> Iterator[list[list[float]]]:
    """Every way windows started by admissions take in ``xs`` (sorted), each window a list of its
    admissions: the first one starts a window; each later one joins the open window if it is
    within window + EDGE of its start, starts the next if it is window - EDGE or more after it
    (either, within EDGE of its end)."""

    def grow(taken: int, windows: list[list[float]]) -> Iterator[list[list[float]]]:
        if taken == len(xs):
            yield windows
            return
        x = xs[taken]
        if windows and x <= windows[-1][0] + window + EDGE:
            yield from grow(taken + 1, [*windows[:-1], [*windows[-1], x]])
        if not windows or x >= windows[-1][0] + window - EDGE:
            yield from grow(taken + 1, [*windows, [x]])

    return grow(0, [])


def first_anchored(policy: Policy) -> bool:
    return FIRST_ANCHORED in (limit.promise for limit in policy.limits or (policy,))


def origin_of(policy: Policy, placed: Sequence[tuple[Operation, float]]) -> float:
    """Where the identity's aligned windows start (``phase``); the oracle judges one key at a
    time, so any placed operation's key is the identity's."""
    return policy.origin(placed[0][0].key) if placed else 0.0


def keeps(policy: Policy, placed: Sequence[tuple[Operation, float]]) -> bool:
    """Whether admissions at these instants keep ``policy``'s promise (each of its limits)."""
    return all(keeps_one(limit, placed) for limit in policy.limits or (policy,))


def keeps_one(policy: Policy, placed: Sequence[tuple[Operation, float]]) -> bool:
    """``keeps``, for a policy of one limit."""
    xs = sorted(instant for op, instant in placed for _ in range(op.cost))
    if policy.promise == FIRST_ANCHORED:  # some way of taking them in holds limit per window
        limit, window = window_params(policy)
        windows = first_windows(xs, window)
        return any(all(len(held) <= limit for held in taken) for taken in windows)
    if policy.kind in ("fixed-window", "sliding-counter"):  # the counter's aligned windows
        # one convention at every edge: all of them shifted alike, by up to EDGE either way
        limit, window = window_params(policy)
        origin = origin_of(policy, placed)
        return any(
            max(Counter(math.floor((x - origin - shift) / window) for x in xs).values(), default=0)
            <= limit
            for shift in (-EDGE, 0.0, EDGE)
        )
    if policy.kind == "sliding-window":  # any half-open [x, x + window - EDGE)
        limit, window = window_params(policy)
        return all(sum(x <= y < x + window - EDGE for y in xs) <= limit for x in xs)
    capacity, rate = bucket_params(policy)
    burst = 1 if policy.kind == "leaky-bucket" else capacity
    # any span [x, y] holds at most burst + rate * (y - x): a bucket's admissions, a leaky
    # bucket's departures
    spans = [(x, y) for x in xs for y in xs if x <= y]
    if any(sum(x <= z <= y for z in xs) > burst + rate * (y - x) for x, y in spans):
        return False
    if policy.kind != "leaky-bucket":
        return True
    # at most capacity waiting: accepted (its now; none without one) and not yet departed
    queued = [(op.now, departs) for op, departs in placed if op.now is not None]
    return all(sum(a <= t < d for a, d in queued) <= capacity for t, _ in queued)


def exhausted(
    policy: Policy, t: float, placed: Sequence[tuple[Operation, float]], cost: int = 1
) -> bool:
    """Whether a rejection at ``t`` of a request of ``cost`` is right, these admissions placed
    so (LATER: after t): ``cost`` more would break the promise (of one of the limits)."""
    return any(exhausted_one(limit, t, placed, cost) for limit in policy.limits or (policy,))


def exhausted_one(
    policy: Policy, t: float, placed: Sequence[tuple[Operation, float]], cost: int
) -> bool:
    """``exhausted``, for a policy of one limit."""
    more = cost - 1  # beyond the one more each rule below asks about
    if policy.kind == "leaky-bucket":  # the queue was full: accepted by t, departing after t
        capacity, _ = bucket_params(policy)
        waiting = sum(
            op.cost for op, departs in placed if accepted(op) <= t < departs and not_yet(op, t)
        )
        return waiting + more >= capacity
    xs = [x for op, x in placed if x <= t for _ in range(op.cost)]
    if policy.kind in ("token-bucket", "gcra"):
        # cost more at t would break the promise in some span [s, t]
        capacity, rate = bucket_params(policy)
        return any(sum(s <= x for x in xs) + cost > capacity + rate * (t - s) for s in [*xs, t])
    limit, window = window_params(policy)
    if policy.promise == FIRST_ANCHORED:  # in some way of taking them in, t's window is full
        return more >= limit or any(  # (a window t starts could never hold it)
            held[0] <= t <= held[0] + window + EDGE and len(held) + more >= limit
            for taken in first_windows(sorted(xs), window)
            for held in taken
        )
    if policy.kind == "sliding-window":  # the window before t, and EDGE more
        return sum(x >= t - window - EDGE for x in xs) + more >= limit
    if policy.kind == "fixed-window":  # any window t is in or within EDGE of
        origin = origin_of(policy, placed)
        edges = {math.floor((t - origin + sign * EDGE) / window) for sign in (-1, 1)}
        return any(sum(k * window + origin - EDGE <= x for x in xs) + more >= limit for k in edges)
    start = math.floor(t / window) * window
    current = sum(x >= start for x in xs)
    previous = sum(start - window <= x < start for x in xs)
    return current + previous * (1 - (t - start) / window) + more >= limit


def not_yet(op: Operation, t: float) -> bool:
    """Whether ``op`` may not have ended by ``t``: one placed ``LATER`` (in a composite with
    windows started by admissions, an unknown one left out of them) that completed by t has
    still departed by t."""
    return op.complete is None or op.complete > t


def over_admitted(policy: Policy, admitted: list[Operation], unknown: list[Operation]) -> bool:
    """No placement of ``admitted`` on the grid keeps the promise. Depth first, giving up on a
    partial placement that already breaks it (more admissions never mend a broken promise),
    except for windows started by admissions: there an admission placed early may start a window
    early and make room, and an unknown operation may be such an admission, or not be one."""
    anchored = first_anchored(policy)
    optional = unknown if anchored else []
    latest = max((op.complete for op in admitted if op.complete is not None), default=0.0)

    def placeable(placed: list[tuple[Operation, float]], left_out: int) -> bool:
        if not anchored and not keeps(policy, placed):
            return False
        if len(placed) + left_out == len(admitted) + len(optional):
            return keeps(policy, placed)
        if len(placed) + left_out < len(admitted):
            op = admitted[len(placed) + left_out]
            assert op.complete is not None
            xs = on_grid(op.invoke, op.complete, grid(policy))
            return any(placeable([*placed, (op, x)], left_out) for x in xs)
        # an unknown one: left out, or anywhere up to the last admission (after it, it is alone)
        op = optional[len(placed) + left_out - len(admitted)]
        last = latest if op.complete is None else min(op.complete, latest)
        xs = on_grid(op.invoke, last, grid(policy)) if op.invoke <= last else []
        return placeable(placed, left_out + 1) or any(
            placeable([*placed, (op, x)], left_out) for x in xs
        )

    return not placeable([], 0)


def wrongly_rejected(policy: Policy, rejection: Operation, maybe: list[Operation]) -> bool:
    """At every instant of the rejection, under every placement of ``maybe``, budget was left.
    (Under windows started by admissions, an unknown one counted may start a window that ends
    before the rejection: so it may also not have counted.)"""
    assert rejection.complete is not None
    anchored = first_anchored(policy)
    for t in on_grid(rejection.invoke, rejection.complete, grid(policy)):
        choices = []
        for op in maybe:
            if op.refund and honours_refunds(policy) and given_back_by(op) < t:
                choices.append([(op, LATER)])  # given back before t: it no longer counts
                continue
            end = math.inf if op.complete is None else op.complete
            before = on_grid(op.invoke, min(end, t), grid(policy)) if op.invoke <= t else []
            left_out = end > t or (anchored and op.outcome is Outcome.UNKNOWN)
            choices.append([(op, x) for x in [*before, *([LATER] if left_out else [])]])
        if any(exhausted(policy, t, placed, rejection.cost) for placed in product(*choices)):
            return False
    return True


def honours_refunds(policy: Policy) -> bool:
    """Whether a give-back is judged to take effect (the windows), not left as unknown."""
    return policy.kind in ("fixed-window", "sliding-window", "sliding-counter")


def given_back_by(op: Operation) -> float:
    """The latest instant ``op``'s give-back may have taken effect at."""
    assert op.refund is not None
    return math.inf if op.refund[1] is None else op.refund[1]


def oracle(history: list[Operation], policy: Policy) -> set[str]:
    found = {"wrongful-rejection"} if wrongful_by_oracle(history, policy) else set()
    for key in sorted({op.key for op in history}):
        ops = [op for op in history if op.key == key]
        admitted = [op for op in ops if op.outcome is Outcome.ALLOWED and op.refund is None]
        given_back = [op for op in ops if op.outcome is Outcome.ALLOWED and op.refund]
        unknown = [op for op in ops if op.outcome is Outcome.UNKNOWN] + given_back
        if over_admitted(policy, admitted, unknown):
            found.add("over-admission")
    return found


def wrongful_by_oracle(history: list[Operation], policy: Policy) -> list[Operation]:
    """The rejections the oracle finds wrongful."""
    found = []
    for key in sorted({op.key for op in history}):
        ops = [op for op in history if op.key == key]
        maybe = [op for op in ops if op.outcome in (Outcome.ALLOWED, Outcome.UNKNOWN)]
        rejected = [op for op in ops if op.outcome is Outcome.REJECTED]
        found += [
            op
            for op in rejected
            if wrongly_rejected(policy, op, maybe + counted_refusals(policy, op, rejected))
        ]
    return found


def counted_refusals(
    policy: Policy, rejection: Operation, rejected: list[Operation]
) -> list[Operation]:
    """The other rejections, where every attempt counts (``count=attempts``): each may come
    before this one and count against it, as an admission would."""
    attempts = any(limit.count == "attempts" for limit in policy.limits or (policy,))
    return [op for op in rejected if op is not rejection] if attempts else []


quarters = st.integers(-8, 10).map(lambda n: n * GRID)  # -2 s to 2.5 s, 0 among them
lengths = st.sampled_from([0, 0, 0, 1, 1, 1, 2, 2, 3, 4, 6]).map(lambda n: n * GRID)


@st.composite
def operations(
    draw: st.DrawFn,
    outcome: Outcome,
    shared: list[float],
    costs: st.SearchStrategy[int],
    refunds: bool = False,
) -> Operation:
    key = draw(st.sampled_from(["a", "a", "b"]))
    invoke = draw(st.sampled_from(shared) | quarters)  # several at one instant, often
    complete: float | None = invoke + draw(lengths)
    if outcome is Outcome.UNKNOWN and draw(st.booleans()):
        complete = None
    now = None
    if outcome is not Outcome.REJECTED and draw(st.integers(0, 5)):  # queued -1 s to +0.25 s
        now = invoke - draw(st.integers(-1, 4)) * GRID
    process = f"p{draw(st.integers(0, 2))}"
    refund = None
    if refunds and outcome is Outcome.ALLOWED and complete is not None and draw(st.integers(0, 3)):
        given = complete + draw(lengths)
        refund = (given, None if draw(st.integers(0, 4)) == 0 else given + draw(lengths))
    return Operation(process, key, invoke, complete, outcome, now, cost=draw(costs), refund=refund)


UNIT, WEIGHTS = st.just(1), st.sampled_from([1, 1, 2, 3, 4])


@st.composite
def histories(
    draw: st.DrawFn, costs: st.SearchStrategy[int] = UNIT, *, refunds: bool = False
) -> list[Operation]:
    counts = {Outcome.ALLOWED: 6, Outcome.UNKNOWN: 2, Outcome.REJECTED: 3, Outcome.ERROR: 1}
    if costs is not UNIT:  # fewer, so that a brute force over their units stays quick
        counts = {Outcome.ALLOWED: 4, Outcome.UNKNOWN: 1, Outcome.REJECTED: 3, Outcome.ERROR: 1}
    if refunds:  # fewer unknown ones, more rejections: what was given back is left out of them
        counts = {Outcome.ALLOWED: 6, Outcome.UNKNOWN: 1, Outcome.REJECTED: 4, Outcome.ERROR: 1}
    shared = draw(st.lists(quarters, min_size=1, max_size=3))
    history = []
    for outcome, most in counts.items():
        history += draw(st.lists(operations(outcome, shared, costs, refunds), max_size=most))
    return sorted(history, key=lambda op: op.invoke)


def policies(promise: str) -> st.SearchStrategy[Policy]:
    kind, anchor = kind_and_anchor(promise)
    if "limit" in KINDS[kind]:
        windows = st.sampled_from([0.5, 1.0, 2.0])
        limits = st.integers(1, 3)
        return st.builds(
            Policy, st.just(kind), limit=limits, window=windows, anchor=st.just(anchor)
        )
    rates = st.sampled_from([0.5, 1.0, 2.0, 4.0, 8.0])
    return st.builds(Policy, st.just(kind), capacity=st.integers(1, 3), rate=rates)


composites = st.lists(st.sampled_from(PROMISES).flatmap(policies), min_size=2, max_size=2).map(
    lambda limits: Policy.composite(tuple(limits))
)


def kind_and_anchor(promise: str) -> tuple[str, str]:
    kind, _, option = promise.partition(":anchor=")
    return kind, option or "aligned"


def point(t: float, outcome: Outcome = Outcome.ALLOWED, complete: float | None = None) -> Operation:
    return Operation("p", "a", t, t if complete is None else complete, outcome, t)


@pytest.mark.parametrize("promise", PROMISES)
def test_the_checkers_agree_with_the_oracle(promise: str) -> None:
    kind, anchor = kind_and_anchor(promise)

    @settings(deadline=None)  # brute force: its slowest examples take 0.1 s on an idle machine
    @given(policies(promise), histories())
    # issue 11: a bucket that refuses with one token left
    @example(Policy(kind, capacity=2, rate=1), [point(1.0), point(1.0, Outcome.REJECTED)])
    # issue 11: a rejection completing at 0.0 is not an instant at its invoke
    @example(
        Policy(kind, limit=1, window=1, anchor=anchor),
        [point(0.0), point(-0.25, Outcome.REJECTED, 0.0)],
    )
    @example(Policy(kind, capacity=1, rate=1), [point(0.0), point(-0.25, Outcome.REJECTED, 0.0)])
    # a bucket refilled by quarters to two tokens, then one taken: the rejection is wrongful
    @example(
        Policy(kind, capacity=2, rate=4),
        [*map(point, [2.75, 3.0, 3.25, 3.5, 3.75]), point(3.75, Outcome.REJECTED)],
    )
    # issue 11: windows before time 0
    @example(Policy(kind, limit=2, window=3, anchor=anchor), [point(-1.25)])
    # a window's limit admitted at its start, one refused at exactly its end, one admitted after
    @example(
        Policy(kind, limit=3, window=2, anchor=anchor),
        [*map(point, [0.5, 0.5, 0.5]), point(2.5, Outcome.REJECTED), point(2.75)],
    )
    # an unknown operation may have started a window that ended in time for the next two
    @example(
        Policy(kind, limit=2, window=2, anchor=anchor),
        [
            Operation("p", "a", 0.25, None, Outcome.UNKNOWN),
            *map(point, [0.5, 2.5, 2.75]),
        ],
    )
    def run(policy: Policy, history: list[Operation]) -> None:
        if None in policy.params().values():  # an example made for other kinds
            return
        agree(policy, history, may_be_inconclusive=promise in MAY_BE_INCONCLUSIVE)

    run()


@pytest.mark.parametrize("promise", PROMISES)
@settings(deadline=None)
@given(data=st.data())
def test_the_checkers_agree_with_the_oracle_on_weighted_requests(
    promise: str, data: st.DataObject
) -> None:
    policy, history = data.draw(policies(promise)), data.draw(histories(WEIGHTS))
    # a weighted request's units may be placed apart: where that keeps the promise but no
    # placement at one instant was found, the verdict is inconclusive
    agree(policy, history, may_be_inconclusive=True)


@settings(deadline=None)
@given(composites, histories())
# two limits, each kept by its own placement but never by one: the request at [1.75, 2.75]
# must come before 2.0 for the fixed windows, at 2.75 for the sliding window
@example(
    Policy.parse("fixed-window:limit=1,window=1 + sliding-window:limit=2,window=2"),
    [point(0.75), point(1.75, complete=2.75), point(2.25)],
)
def test_the_checkers_agree_with_the_oracle_on_composite_policies(
    policy: Policy, history: list[Operation]
) -> None:
    agree(policy, history, may_be_inconclusive=True)


@settings(deadline=None)
@given(
    st.builds(
        Policy,
        st.just("fixed-window"),
        limit=st.integers(1, 3),
        window=st.sampled_from([3.0, 4.0]),  # identities a and b start theirs 1 s or 2 s apart
        phase=st.just("crc32"),
    ),
    histories(),
)
# a's windows of 3 s start at 1 s: 0.5 and 1.5 are in two windows, and 1.5 has room
@example(Policy("fixed-window", limit=1, window=3, phase="crc32"), [point(0.5), point(1.5)])
@example(
    Policy("fixed-window", limit=1, window=3, phase="crc32"),
    [point(0.5), point(1.5, Outcome.REJECTED)],
)
def test_the_checkers_agree_with_the_oracle_on_each_identitys_own_windows(
    policy: Policy, history: list[Operation]
) -> None:
    agree(policy, history, may_be_inconclusive=False)


@pytest.mark.parametrize("promise", ["fixed-window", "sliding-window", "fixed-window:anchor=first"])
@settings(deadline=None)
@given(data=st.data())
def test_the_checkers_agree_with_the_oracle_where_attempts_count(
    promise: str, data: st.DataObject
) -> None:
    policy = replace(data.draw(policies(promise)), count="attempts")
    history = data.draw(histories(st.sampled_from([1, 1, 2])))
    verdict = check(history, policy)
    found = verdict.kinds & {"over-admission", "wrongful-rejection"}
    expected = oracle(history, policy)
    # over-admission is judged by the admissions alone: a window over its limit in admissions
    # is over it in attempts, but one whose refusals pushed a later admission over is missed
    assert found <= expected | {"over-admission"}, ("the checker accused", verdict.to_json())
    if "over-admission" in found:
        assert "over-admission" in oracle(history, replace(policy, count="admissions"))
    if promise != FIRST_ANCHORED:  # there only the sliding window's bound is applied
        missed = expected - found - {"over-admission"}
        assert not missed, ("the checker missed", verdict.to_json())


@pytest.mark.parametrize("promise", PROMISES)
@settings(deadline=None)
@given(data=st.data())
def test_the_checkers_agree_with_the_oracle_on_requests_given_back(
    promise: str, data: st.DataObject
) -> None:
    policy, history = data.draw(policies(promise)), data.draw(histories(refunds=True))
    verdict = check(history, policy)
    found = verdict.kinds & {"over-admission", "wrongful-rejection"}
    expected = oracle(history, policy)
    assert found <= expected, ("the checker accused", verdict.to_json())
    missed = expected - found
    if promise in MAY_BE_INCONCLUSIVE and verdict.inconclusive:
        missed.discard("over-admission")
    missed.discard("wrongful-rejection")  # judged one rejection at a time below
    assert not missed, ("the checker missed", verdict.to_json())
    if promise == FIRST_ANCHORED:
        return  # the exact search for windows started by admissions counts what was given
        # back as it counts an unknown request: only the sliding window's bound leaves it out
    accused = {
        id(w.operations[0]) for v in verdict.of_kind("wrongful-rejection") for w in v.witnesses
    }
    for rejection in wrongful_by_oracle(history, policy):
        # the checker leaves out what was given back before the rejection was invoked; the
        # oracle, what was given back before each instant the rejection may have happened at
        if id(rejection) not in accused and not given_back_during(rejection, history):
            raise AssertionError("the checker missed", rejection, verdict.to_json())


def given_back_during(rejection: Operation, history: list[Operation]) -> bool:
    """Whether some give-back of the rejection's key may have completed while it was in flight."""
    assert rejection.complete is not None
    return any(
        op.key == rejection.key and rejection.invoke <= given_back_by(op) < rejection.complete
        for op in history
        if op.refund
    )


def test_a_rejection_after_a_give_back_is_judged_without_the_request_given_back() -> None:
    policy = Policy.parse("fixed-window:limit=2,window=10")
    kept, given_back = point(0.25), point(0.5)._replace(refund=(0.75, 1.0))
    rejection = point(1.5, Outcome.REJECTED)
    assert oracle([kept, given_back, rejection], policy) == {"wrongful-rejection"}
    assert check([kept, given_back, rejection], policy).kinds == {"wrongful-rejection"}
    # given back while the rejection was in flight: it may still have counted
    late = given_back._replace(refund=(0.75, 1.75))
    assert check([kept, late, rejection._replace(complete=2.0)], policy).kinds == set()


def agree(policy: Policy, history: list[Operation], *, may_be_inconclusive: bool) -> None:
    """The checker accuses only what the oracle does, and misses nothing the oracle finds but
    an over-admission where it says inconclusive (when it may)."""
    verdict = check(history, policy)
    found = verdict.kinds & {"over-admission", "wrongful-rejection"}
    expected = oracle(history, policy)
    assert found <= expected, ("the checker accused", verdict.to_json())
    missed = expected - found
    if may_be_inconclusive and verdict.inconclusive:
        missed.discard("over-admission")
    assert not missed, ("the checker missed", verdict.to_json())
