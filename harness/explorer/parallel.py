"""race-test's rows on every core: one worker process per job, each racing on a Redis of its
own. The costliest rows start first; each is told of as it ends, and they are handed back in
catalogue order.

The parent starts the servers (so it stops them, whatever becomes of the workers) and gives
each worker one as it starts. A Redis the harness was given is one server: its rows run one
after another, as they would in a single job.
"""

from __future__ import annotations

import contextlib
import multiprocessing
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ratelimit_harness.harness.explorer.campaign import Target, run_row, weight
from ratelimit_harness.harness.explorer.search.explore import Exploration
from ratelimit_harness.harness.history.races import RaceTestRow
from ratelimit_harness.harness.provision import RedisServer, provision_explorer

_worker: dict[str, tuple[str, str]] = {}  # "url": the Redis this worker process races on


@dataclass(frozen=True)
class RowJob:
    """What every row of one race-test shares (the Redis excepted)."""

    flush: bool
    max_examples: int
    seed: int | None
    out_dir: Path
    stress_seconds: float
    count_unseen: bool = False  # the servers are the harness's own (see unseen)


def run_rows(
    targets: list[Target],
    job: RowJob,
    servers: list[RedisServer],
    on_row: Callable[[Target, RaceTestRow], None],
    progress: Callable[[str], Callable[[Exploration], None]],
) -> list[RaceTestRow]:
    """Every target's row, in order, on as many worker processes as there are servers (one:
    in this process, with ``progress(label)`` told of every schedule). ``on_row`` is told of
    each row as it ends."""
    if len(servers) == 1:
        rows = []
        for target in targets:
            rows.append(_row(target, job, _place(servers[0]), progress(target.label)))
            on_row(target, rows[-1])
        return rows
    urls: Any = multiprocessing.get_context("spawn").Queue()
    for server in servers:
        urls.put(_place(server))
    with ProcessPoolExecutor(
        len(servers),
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_take_server,
        initargs=(urls,),
    ) as pool:
        # the costliest first, so that no long row starts last while the other cores idle
        # (one race-test's row times, dealt so to 2 cores: 216 s, against 231 s in catalogue order)
        costliest = sorted(range(len(targets)), key=lambda n: -weight(targets[n]))
        futures = {pool.submit(_worker_row, targets[n], job): n for n in costliest}
        done: dict[int, RaceTestRow] = {}
        for future in as_completed(futures):
            n = futures[future]
            done[n] = future.result()
            on_row(targets[n], done[n])
        return [done[n] for n in range(len(targets))]


@contextlib.contextmanager
def servers_for(jobs: int, how: str | None, url: str | None) -> Iterator[list[RedisServer]]:
    """``jobs`` servers the harness starts, or the one it was given (then one job)."""
    with contextlib.ExitStack() as stack:
        count = 1 if url else jobs
        yield [stack.enter_context(provision_explorer(how, url)) for _ in range(count)]


def _take_server(urls: Any) -> None:
    _worker["place"] = urls.get()


def _worker_row(target: Target, job: RowJob) -> RaceTestRow:
    return _row(target, job, _worker["place"], _quiet)


def _place(server: RedisServer) -> tuple[str, str]:
    """What a worker needs to know of its server: its URL and its clock file, if any."""
    return server.url, server.clock_file


def _row(
    target: Target,
    job: RowJob,
    place: tuple[str, str],
    on_example: Callable[[Exploration], None],
) -> RaceTestRow:
    url, clock_file = place
    return run_row(
        target,
        url=url,
        clock_file=clock_file,
        flush=job.flush,
        instances=2,
        max_examples=job.max_examples,
        seed=job.seed,
        out_dir=job.out_dir,
        on_example=on_example,
        stress_seconds=job.stress_seconds,
        count_unseen=job.count_unseen,
    )


def _quiet(found: Exploration) -> None:
    return None
