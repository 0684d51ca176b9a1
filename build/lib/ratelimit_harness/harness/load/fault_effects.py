"""What each fault of a load run's nemesis did to each rule: read from the faults the run marked
(``RUN_DIR/faults.jsonl``, ``harness.load.nemesis``) and a rule's merged histories, the clients'
(what the users saw) and the instances'. Pure.

For one fault and one rule:

- ``requests``: the rule's requests the clients sent while the fault lasted;
- ``undecided``: those that got no decision (an answer that is neither 2xx nor 429: the
  limiter failed, or the instance could not be reached; a 2xx let through unchecked), from the
  fault's start until the rule recovered; a rule's ``on_error`` says what the limiter's failures
  got: refused (``closed``, a 503) or admitted unchecked (``open``);
- ``lost``: requests an instance took and never answered (in flight when the fault killed it),
  invoked after the previous fault ended and before this one did;
- ``recovery``: seconds from the fault's end until the rule decided normally again: the answer
  of the first decided request invoked after the last failure before the next fault (after the
  end itself if none failed); None when nothing was decided after it;
- ``over_admitted``: the over-admissions (of the verdict's witnesses) whose span the fault fell
  in: a window or a bucket's stretch that was open while the fault lasted, whose counts a Redis
  emptied by the fault forgot. One that overlaps no fault is the limiter's own;
- ``promises_broken``: likewise the broken promises of ``X-RateLimit-Remaining`` whose window,
  up to the promise, the fault fell in.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

from ratelimit_harness.harness.history import Operation, Outcome
from ratelimit_harness.harness.history.loads import FaultEffect, FaultRecord
from ratelimit_harness.harness.history.verdict import Witness
from ratelimit_harness.harness.load.nemesis import FAULTS_FILE


def read_faults(run_dir: Path) -> list[FaultRecord]:
    """The faults the run marked, in order; a fault begun and never ended has no end. A line
    that does not parse is skipped (the file is only ever appended to)."""
    path = run_dir / FAULTS_FILE
    if not path.exists():
        return []
    faults: dict[tuple[str, int], FaultRecord] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
            key = (str(record["fault"]), int(record["turn"]))
            phase, at = record["phase"], float(record["time"])
        except (ValueError, KeyError, TypeError):
            continue
        if phase == "start":
            faults[key] = FaultRecord(key[0], key[1], at, None, str(record.get("detail", "")))
        elif phase == "end" and key in faults:
            faults[key].end = at
    return sorted(faults.values(), key=lambda fault: fault.start)


def _fell_in(witnesses: Sequence[Witness], start: float, end: float) -> int:
    """The count of ``witnesses`` whose span overlaps [start, end]."""
    return sum(w.excess for w in witnesses if w.span[0] <= end and start <= w.span[1])


def _failed(op: Operation) -> bool:
    return op.complete is not None and op.outcome in (Outcome.UNKNOWN, Outcome.ERROR)


def _decided(op: Operation) -> bool:
    return op.complete is not None and op.outcome in (Outcome.ALLOWED, Outcome.REJECTED)


def effects(
    seen: Sequence[Operation],
    taken: Sequence[Operation],
    faults: Sequence[FaultRecord],
    on_error: str,
    *,
    over: Sequence[Witness] = (),
    broken: Sequence[Witness] = (),
) -> list[FaultEffect]:
    """Each fault's effect on one rule, from what its clients ``seen``, its instances ``taken``,
    the ``over``-admissions its verdict found and the promises ``broken`` (see the module's
    text), in order."""
    ops = sorted(seen, key=lambda op: op.invoke)
    ends = [op.complete or op.invoke for op in ops]
    run_end = max([*ends, *(fault.end or fault.start for fault in faults)], default=0.0)
    found = []
    for index, fault in enumerate(faults):
        end = fault.end if fault.end is not None else run_end
        since = faults[index - 1].end or faults[index - 1].start if index else -math.inf
        until = faults[index + 1].start if index + 1 < len(faults) else math.inf
        after = [op for op in ops if end <= op.invoke < until]
        # a failure answered once the next fault began is that fault's
        failures = [op.invoke for op in after if _failed(op) and (op.complete or 0) < until]
        settled = max(failures, default=end)
        recovered = next(
            (op.complete for op in after if op.invoke >= settled and _decided(op)), None
        )
        stop = until if recovered is None else min(recovered, until)
        found.append(
            FaultEffect(
                requests=sum(1 for op in ops if fault.start <= op.invoke < end),
                undecided=sum(1 for op in ops if fault.start <= op.invoke < stop and _failed(op)),
                lost=sum(1 for op in taken if op.complete is None and since <= op.invoke < end),
                on_error=on_error,
                recovery=None if recovered is None else round(max(0.0, recovered - end), 3),
                over_admitted=_fell_in(over, fault.start, end),
                promises_broken=_fell_in(broken, fault.start, end),
            )
        )
    return found
