"""Judging a history file too large to hold in memory: its keys split into parts, each part
judged apart, on every core, and the parts' verdicts joined into the verdict of the whole.

Keys are independent: every checker judges one key's operations apart from every other key's.
(Collisions, a Redis key used by two identities, are the exception: each part keeps the first
operation of each identity on each Redis key, and they are judged once, across parts.) So the
file is read in two stages:

1. **Routing.** The file is cut into byte ranges at line ends, one per worker. Each worker reads
   only the ``key`` of each line and appends the line, with its number, to the file of its part
   (the key's CRC-32 modulo the number of parts), in a folder under ``TMPDIR``.
2. **Judging.** Each part is read back (its ranges in file order, so each key keeps file order),
   judged by ``check`` as any history is, and dropped. What the joined verdict needs is kept:
   each kind's count and first ``MAX_WITNESSES`` witnesses, the metrics' counts, and the part's
   latencies, sorted, on disk (``latency_files``).

Memory holds one part per worker, whatever the file's length: a part is about ``PART_BYTES`` of
the file. A key's operations are never split, so one key larger than a part (a *busy* one) is
judged as a stream where the policy allows (``busy``, ``stream.identity``), holding a few
windows of it; else it is held whole. That is the bound: O(twice
``PART_BYTES``, and a few windows of each busy key streamed), per worker; a busy key held whole
adds its operations.

The joined verdict is the one ``check`` gives the whole history, as JSON: the same counts, the
same listed witnesses in the same order (``check`` lists them key by key, in the order the keys
first appear), the same metrics (a latency percentile is found by rank across the parts' sorted
latencies, so it is exact). A bad line is reported with its number, as ``read_history`` does.

Other files of records that name an identity in a ``key`` field (the promises a load run's
clients were given) can go **beside** the history: routed with it, by the same key, and handed
to a ``Beside`` with each part's operations, so that they too are judged in bounded memory.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import math
import os
import shutil
import tempfile
import threading
import zlib
from collections import Counter
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from multiprocessing import get_context
from operator import itemgetter
from pathlib import Path
from typing import Any, BinaryIO, Protocol, TypedDict, TypeVar, Unpack

import msgspec
import numpy as np
import numpy.typing as npt

from ratelimit_harness.harness.checkers import check, judge
from ratelimit_harness.harness.checkers.compose.state import collision_witnesses
from ratelimit_harness.harness.checkers.compose.table import OVER, WRONG
from ratelimit_harness.harness.checkers.figures.latency_files import LatencyFile
from ratelimit_harness.harness.checkers.figures.metrics import PERCENTILES, latencies, nearest_rank
from ratelimit_harness.harness.checkers.policies.sliding_counter import disagreement
from ratelimit_harness.harness.checkers.stream.busy import Owners, Streamed
from ratelimit_harness.harness.checkers.stream.common import Found, NotStreamable
from ratelimit_harness.harness.checkers.stream.identity import not_streamable, streamable
from ratelimit_harness.harness.errors import EnvironmentFailure
from ratelimit_harness.harness.history import HistoryError, Operation, read_history
from ratelimit_harness.harness.history.jsonl import operations_of_lines
from ratelimit_harness.harness.history.records import collector_paused
from ratelimit_harness.harness.history.verdict import MAX_WITNESSES, Verdict, Violation, Witness
from ratelimit_harness.limiters.policy import Policy

PART_BYTES = 32 << 20  # of the history file, per part: about 280,000 operations
MAX_PARTS = 512  # open files per routing worker: twice this
BATCH_BYTES = 4 << 20  # read at once by a routing worker
CONVERT_LINES = 8192  # lines converted at once by a judging worker
COLLISION = "collision"  # judged across parts
_NUMBER = itemgetter(0)  # of a (line number, operation)

T = TypeVar("T")
Progress = Callable[[str, int, int], None]  # (stage, done, of)
Held = Callable[[str, str], None]  # (identity, why): a busy identity held whole


class Beside(Protocol):
    """Files of records beside a history, each naming an identity in its ``key`` field, and how
    to judge them against it: called once a part, with the part's operations and the part's
    records (each line with its number across ``paths``, counted from 1, in file order). What
    it returns is the caller's to join. It must pickle (it goes to the workers).

    Where it reads only the admitted operations (``admitted_only``), it is handed only those of
    a busy identity judged as a stream (``busy``), so that the identity's others need not be
    held."""

    @property
    def paths(self) -> Sequence[str]: ...

    @property
    def admitted_only(self) -> bool: ...

    def __call__(
        self, operations: Sequence[Operation], records: list[tuple[int, bytes]]
    ) -> Any: ...


class Options(TypedDict, total=False):
    """How a file is judged (``judge_file``'s keywords but ``beside``)."""

    unjudged: Mapping[str, str] | None
    workers: int | None
    part_bytes: int | None
    progress: Progress | None
    held: Held | None


def check_file(
    path: str | os.PathLike[str],
    policy: Policy,
    ttls: Mapping[str, float] | None = None,
    **options: Unpack[Options],
) -> Verdict:
    """The verdict ``check`` gives the history file ``path`` (see ``check``), in bounded memory:
    ``judge_file``'s."""
    return judge_file(path, policy, ttls, **options)[0]


def judge_file(
    path: str | os.PathLike[str],
    policy: Policy,
    ttls: Mapping[str, float] | None = None,
    *,
    unjudged: Mapping[str, str] | None = None,
    workers: int | None = None,
    part_bytes: int | None = None,
    progress: Progress | None = None,
    held: Held | None = None,
    beside: Beside | None = None,
) -> tuple[Verdict, list[Any]]:
    """The verdict ``check`` gives the history file ``path`` (see ``check``), in bounded memory,
    and what ``beside`` found in each part (one result for a history judged at once; none
    without ``beside``). A file of at most ``part_bytes`` (default ``PART_BYTES``, the beside
    files' size counted in) is read and judged at once; a larger one in parts, by ``workers``
    processes (default: one per core). ``progress``, when given, hears each stage's advance;
    ``held``, of each identity larger than a part that was held whole, not streamed, and why.
    Raises HistoryError for a bad line or an unreadable file, EnvironmentFailure when the parts
    cannot be written or a worker dies."""
    extra = list(beside.paths) if beside else []
    size = _size(path) + sum(map(_size, extra))
    part_bytes = part_bytes or PART_BYTES
    if size <= part_bytes:
        history = read_history(path)
        verdict = check(history, policy, ttls, unjudged=unjudged)
        return verdict, [beside(history, _numbered(extra))] if beside else []
    workers = workers or os.cpu_count() or 1
    parts = part_count(size, part_bytes, workers)
    folder = tempfile.mkdtemp(prefix="ratelimit-harness-parts-")
    try:
        _need_room(folder, size)
        with _pool(workers) as pool:
            spans = _spans(path, workers)
            routed = [
                pool.submit(_route, os.fspath(path), span, folder, str(i), parts)
                for i, span in enumerate(spans)
            ] + [
                pool.submit(_route, other, (0, _size(other)), folder, f"b{i}", parts)
                for i, other in enumerate(extra)
            ]
            lines = _gathered(routed, "reading the history by key", progress)
            offsets = [0, *np.cumsum(lines[: len(spans)])[:-1].tolist()]
            beside_offsets = [0, *np.cumsum(lines[len(spans) :])[:-1].tolist()]
            kept = {**(unjudged or {}), COLLISION: "judged across parts"}
            job = _Job(
                *(os.fspath(path), folder, offsets, policy, kept, part_bytes),
                *(held is not None, beside, beside_offsets),
            )
            judged = [pool.submit(_judge_part, job, part) for part in range(parts)]
            each_part = _gathered(judged, f"judging {parts} parts", progress)
        found = [judged for of_part in each_part for judged in of_part]
        besides = [of_part[0].beside for of_part in each_part] if beside else []
        if held:
            for identity, why in (each for part in found for each in part.held_whole.items()):
                held(identity, why)
        return _joined(found, policy, ttls, unjudged), besides
    except BrokenProcessPool as error:
        raise EnvironmentFailure(f"a worker judging {path} died: {error}") from None
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def part_count(size: int, part_bytes: int, workers: int) -> int:
    """How many parts a file of ``size`` bytes is cut into: enough for each to hold about
    ``part_bytes``, and a multiple of ``workers`` (so each worker judges as many; 5 parts on 2
    workers would leave one idle for the last), ``MAX_PARTS`` at most."""
    rounds = math.ceil(math.ceil(size / part_bytes) / workers)
    return min(MAX_PARTS, rounds * workers)


def _numbered(paths: Sequence[str]) -> list[tuple[int, bytes]]:
    """The non-blank lines of ``paths``, each with its number across them (from 1)."""
    numbered: list[tuple[int, bytes]] = []
    before = 0
    for path in paths:
        lines = _lines_of(Path(path).read_bytes())
        numbered += [(before + n, line) for n, line in enumerate(lines, 1) if line.strip()]
        before += len(lines)
    return numbered


def _pool(workers: int) -> Executor:
    """``workers`` processes; for one, the caller's own (no process to start)."""
    if workers == 1:
        return _Here()
    return ProcessPoolExecutor(workers, mp_context=get_context(_start_method()))


class _Here(Executor):
    """An executor that runs each task as it is submitted, in this process."""

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        future: Future[T] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except Exception as error:  # the caller's result() raises it
            future.set_exception(error)
        return future


def _start_method() -> str:
    """Fork, where the caller runs one thread (a CLI, a script with no ``__main__`` guard: the
    workers start at once, importing nothing); else spawn (a fork copies no other thread, and
    whatever lock one held stays held)."""
    return "fork" if threading.active_count() == 1 and os.name == "posix" else "spawn"


def _size(path: str | os.PathLike[str]) -> int:
    try:
        return os.stat(path).st_size
    except OSError as error:
        raise HistoryError(f"cannot read: {error.strerror or error}", path) from None


def _need_room(folder: str, size: int) -> None:
    """The parts take as much room as the file: say so before filling the disk."""
    free = shutil.disk_usage(folder).free
    if free < size * 1.1:
        raise EnvironmentFailure(
            f"judging in parts needs {_amount(size * 1.1)} free in {Path(folder).parent} "
            f"(TMPDIR), and {_amount(free)} is"
        )


def _amount(size: float) -> str:
    return f"{size / 1e9:.1f} GB" if size >= 1e9 else f"{size / 1e6:.1f} MB"


def _gathered(futures: list[Future[Any]], stage: str, progress: Progress | None) -> list[Any]:
    """Each future's result, in the order given, once all are done (``progress`` told as each
    ends). The first to fail raises its error at once, the others not yet begun cancelled."""
    for done, future in enumerate(as_completed(futures), 1):
        try:
            future.result()
        except BaseException:
            for other in futures:
                other.cancel()
            raise
        if progress:
            progress(stage, done, len(futures))
    return [future.result() for future in futures]


def _spans(path: str | os.PathLike[str], count: int) -> list[tuple[int, int]]:
    """``count`` byte ranges (fewer for a short file) that cover ``path``, each starting a line."""
    size = os.stat(path).st_size
    starts = [0]
    with open(path, "rb") as file:
        for number in range(1, count):
            file.seek(max(starts[-1], size * number // count))
            file.readline()  # to the end of the line under way
            if file.tell() < size and file.tell() > starts[-1]:
                starts.append(file.tell())
    return list(zip(starts, [*starts[1:], size], strict=True))


class _Keyed(msgspec.Struct, gc=False):
    key: str


_decode_key = msgspec.json.Decoder(_Keyed).decode


def _route(path: str, span: tuple[int, int], folder: str, index: str, parts: int) -> int:
    """Stage 1: append each non-blank line of ``span`` to its part's file (and its number,
    counted from the span's start, to the part's numbers); the lines in the span. A line
    whose key cannot be read goes to part 0, whose judge says what is wrong with it."""
    part_of = _PartOf(parts)
    start, stop = span
    number = 0
    try:
        with collector_paused(), open(path, "rb") as source, _PartFiles(folder, index) as files:
            source.seek(start)
            for lines in _batches(source, stop - start):
                for part, kept, numbers in _grouped(lines, number, part_of):
                    files.append(part, kept, numbers)
                number += len(lines)
    except OSError as error:
        raise HistoryError(f"cannot read: {error.strerror or error}", path) from None
    return number


def _grouped(
    lines: list[bytes], before: int, part_of: _PartOf
) -> Iterator[tuple[int, list[bytes], npt.NDArray[np.int64]]]:
    """The non-blank ``lines`` (numbered from ``before + 1``) by part: each part's, with their
    numbers, in file order."""
    numbers = np.arange(before + 1, before + 1 + len(lines), dtype=np.int64)
    if b"" in lines or any(map(bytes.isspace, lines)):
        kept = [i for i, line in enumerate(lines) if line and not line.isspace()]
        lines, numbers = [lines[i] for i in kept], numbers[kept]
    keys = _keys_of(lines)
    ids = np.fromiter(map(part_of.__getitem__, keys), np.int64, len(keys))
    order = np.argsort(ids, kind="stable")
    bounds = np.cumsum(np.bincount(ids, minlength=part_of.parts)).tolist()
    grouped, numbers = [lines[i] for i in order.tolist()], numbers[order]
    for part, (first, last) in enumerate(itertools.pairwise([0, *bounds])):
        if last > first:
            yield part, grouped[first:last], numbers[first:last]


class _PartOf(dict[str | None, int]):
    """A key's part: its CRC-32 modulo the number of parts (0 for a line with no key read)."""

    def __init__(self, parts: int) -> None:
        super().__init__()
        self.parts = parts

    def __missing__(self, key: str | None) -> int:
        part = self[key] = 0 if key is None else zlib.crc32(key.encode()) % self.parts
        return part


def _batches(source: BinaryIO, size: int) -> Iterator[list[bytes]]:
    """The next ``size`` bytes of ``source`` as lines, each without its newline (cut as
    ``read_history`` cuts them), ``BATCH_BYTES`` at a time."""
    carry = b""  # the start of a line the next chunk ends
    while size > 0:
        chunk = source.read(min(BATCH_BYTES, size))
        if not chunk:
            break
        size -= len(chunk)
        lines = chunk.split(b"\n")  # the chunk is not copied whole: only a line is joined
        lines[0] = carry + lines[0]
        carry = lines.pop()  # after the chunk's last newline: b"" when it ends one
        if lines:
            yield lines
    if carry:
        yield [carry]


def _lines_of(data: bytes) -> list[bytes]:
    """``data`` cut into lines at each newline, which is dropped (a last line may lack one)."""
    lines = data.split(b"\n")
    if not lines[-1]:
        lines.pop()
    return lines


class _PartFiles(contextlib.ExitStack):
    """The files one routing worker writes: for each part, its lines and their numbers."""

    def __init__(self, folder: str, index: str) -> None:
        super().__init__()
        self.base = Path(folder, str(index))  # each file: INDEX-PART.jsonl, INDEX-PART.lines
        self.files: dict[int, tuple[BinaryIO, BinaryIO]] = {}

    def append(self, part: int, lines: list[bytes], numbers: npt.NDArray[np.int64]) -> None:
        if part not in self.files:
            base = f"{self.base}-{part}"
            self.files[part] = (  # opened once, closed with the stack
                self.enter_context(open(f"{base}.jsonl", "wb")),  # noqa: SIM115 (closed by the stack)
                self.enter_context(open(f"{base}.lines", "wb")),  # noqa: SIM115
            )
        lines_file, numbers_file = self.files[part]
        try:
            lines_file.write(b"\n".join(lines) + b"\n")
            numbers.tofile(numbers_file)
        except OSError as error:
            where = self.base.parent
            raise EnvironmentFailure(f"cannot write parts in {where}: {error.strerror}") from None


def _keys_of(lines: list[bytes]) -> list[str | None]:
    """The key of each line, None where it cannot be read."""
    try:
        return [keyed.key for keyed in map(_decode_key, lines)]
    except msgspec.MsgspecError:
        return list(map(_key_of, lines))


def _key_of(line: bytes) -> str | None:
    try:
        return _decode_key(line).key
    except msgspec.MsgspecError:
        return None


@dataclass
class _Part:
    """What the joined verdict needs of one part's."""

    operations: int = 0
    found: dict[str, tuple[int, list[Witness]]] = field(default_factory=dict)  # kind: count, first
    inconclusive: list[Witness] = field(default_factory=list)
    first_lines: dict[str, int] = field(default_factory=dict)  # of the keys listed
    outcomes: dict[str, int] = field(default_factory=dict)
    keys: int = 0
    processes: set[str] = field(default_factory=set)
    latencies: list[LatencyFile] = field(default_factory=list)  # each sorted
    timed: int = 0  # how many: the operations that completed
    slowest: float = 0.0
    given_back: int = 0
    accuracy: dict[str, int] = field(default_factory=dict)
    owners: Owners = field(default_factory=dict)
    held_whole: dict[str, str] = field(default_factory=dict)  # busy identities not streamed: why
    beside: Any = None  # what the Beside found


@dataclass(frozen=True)
class _Job:
    """What every judging worker is told: the file, the folder of its parts, where each range's
    line numbers start, and what to judge by."""

    path: str
    folder: str
    offsets: list[int]
    policy: Policy
    unjudged: dict[str, str]
    part_bytes: int  # what one identity may hold before it is judged as a stream
    tell_held: bool = False  # look for the identities larger than a part held whole, and why
    beside: Beside | None = None
    beside_offsets: list[int] = field(default_factory=list)


def _judge_part(job: _Job, part: int) -> list[_Part]:
    """Stage 2: read part ``part`` back (each range's line numbers made whole by its offset),
    judge it, and keep what the joined verdict needs: first of the part, then of each busy
    identity judged as a stream (``busy``). The cyclic collector is paused meanwhile: it would
    rescan the part's operations again and again while they are built (it finds nothing to
    free among them; a third of the time)."""
    with collector_paused():
        return _judged_part(job, part)


def _judged_part(job: _Job, part: int) -> list[_Part]:
    path = job.path
    streams, held = _busy(job, part)
    operations: list[Operation] = []
    numbers: list[int] = []
    batches = _part_lines(job.folder, "", job.offsets, part)
    for numbered, lines in _streamed(path, streams, batches) if streams else batches:
        for first in range(0, len(lines), CONVERT_LINES):
            batch = slice(first, first + CONVERT_LINES)
            operations += operations_of_lines(path, numbered[batch], lines[batch])
        numbers += numbered
        del lines
    kept: list[_Part] = []
    for key, streamed in streams.items():
        try:
            kept.append(_streamed_part(streamed, streamed.finish()))
        except NotStreamable as why:
            held[key] = str(why)
    if held.keys() & streams.keys():
        numbers, operations = _with(job, part, held.keys() & streams.keys(), numbers, operations)
    rest = _judged(job, operations, numbers, part) if operations else _Part()
    rest.held_whole = held
    if job.beside:
        records = _part_lines(job.folder, "b", job.beside_offsets, part)
        admitted = [stream.admitted for key, stream in streams.items() if key not in held]
        if admitted:  # with those of the busy identities judged as streams, in file order
            merged = heapq.merge(zip(numbers, operations, strict=True), *admitted, key=_NUMBER)
            operations = [op for _, op in merged]
        rest.beside = job.beside(
            operations, [r for n, ls in records for r in zip(n, ls, strict=True)]
        )
    return [rest, *kept]


def _busy(job: _Job, part: int) -> tuple[dict[str, Streamed], dict[str, str]]:
    """The *busy* identities of a part: each larger than a part alone (more than
    ``part_bytes`` of the file). Each to be judged as a stream, where the policy can be
    (``stream.identity``) and what is judged beside the history reads only admissions; else
    (where they are asked for: ``tell_held``) each held whole, and why. Looked for only in a
    part of twice ``part_bytes`` or more: one that holds such an identity."""
    why = not_streamable(job.policy) if not streamable(job.policy) else None
    if job.beside and not job.beside.admitted_only:
        why = "what is judged beside the history needs all its operations"
    if why and not job.tell_held:
        return {}, {}
    files = (Path(job.folder, f"{index}-{part}.jsonl") for index in range(len(job.offsets)))
    if sum(file.stat().st_size for file in files if file.exists()) < 2 * job.part_bytes:
        return {}, {}
    sizes: Counter[str | None] = Counter()
    for _, lines in _part_lines(job.folder, "", job.offsets, part):
        for key, line in zip(_keys_of(lines), lines, strict=True):
            sizes[key] += len(line) + 1
    busy = [key for key, size in sizes.items() if key is not None and size > job.part_bytes]
    if why:
        return {}, dict.fromkeys(busy, why)
    kinds = [kind for kind in (OVER, WRONG) if kind not in job.unjudged]
    keep = job.beside is not None  # the admissions, for the beside
    return {key: Streamed(key, job.policy, kinds, job.folder, keep) for key in busy}, {}


def _streamed(
    path: str, streams: dict[str, Streamed], batches: Iterable[tuple[list[int], list[bytes]]]
) -> Iterator[tuple[list[int], list[bytes]]]:
    """``batches`` of numbered lines less those of the busy identities, which are fed to
    their streams."""
    for numbered, lines in batches:
        busy, rest = _picked(path, streams, numbered, lines)
        by_key: dict[str, tuple[list[int], list[Operation]]] = {}
        for number, op in busy:
            numbers, ops = by_key.setdefault(op.key, ([], []))
            numbers.append(number)
            ops.append(op)
        for key, (numbers, ops) in by_key.items():
            streams[key].add(numbers, ops)
        yield rest


def _with(
    job: _Job, part: int, keys: set[str], numbers: list[int], operations: list[Operation]
) -> tuple[list[int], list[Operation]]:
    """``numbers`` and ``operations`` with those of ``keys`` read again, all in file order."""
    more: list[tuple[int, Operation]] = []
    for numbered, lines in _part_lines(job.folder, "", job.offsets, part):
        more += _picked(job.path, keys, numbered, lines)[0]
    merged = list(heapq.merge(zip(numbers, operations, strict=True), more, key=_NUMBER))
    return [number for number, _ in merged], [op for _, op in merged]


def _picked(
    path: str, keys: Container[str | None], numbered: list[int], lines: list[bytes]
) -> tuple[list[tuple[int, Operation]], tuple[list[int], list[bytes]]]:
    """The operations of ``lines`` (numbered ``numbered``) whose identity is among ``keys``,
    each with its number; and the numbers and lines of the others."""
    of_keys = [key in keys for key in _keys_of(lines)]
    picked = [i for i, wanted in enumerate(of_keys) if wanted]
    numbers = [numbered[i] for i in picked]
    operations = operations_of_lines(path, numbers, [lines[i] for i in picked])
    rest = [i for i, wanted in enumerate(of_keys) if not wanted]
    return list(zip(numbers, operations, strict=True)), (
        [numbered[i] for i in rest],
        [lines[i] for i in rest],
    )


def _streamed_part(streamed: Streamed, found: Found) -> _Part:
    """What the joined verdict needs of an identity judged as a stream."""
    return _Part(
        operations=streamed.operations,
        found=found,
        first_lines={streamed.key: streamed.first_line},
        outcomes={str(o): n for o, n in sorted(streamed.outcomes.items())},
        keys=1,
        processes=streamed.processes,
        latencies=streamed.latency_files,
        timed=streamed.timed,
        slowest=streamed.slowest,
        accuracy=streamed.accuracy,
        owners=streamed.owners,
    )


def _part_lines(
    folder: str, prefix: str, offsets: list[int], part: int
) -> Iterator[tuple[list[int], list[bytes]]]:
    """Part ``part``'s lines of each routed range (``prefix``: of the history, or beside it),
    in file order, with their numbers, ``BATCH_BYTES`` at a time."""
    for index, offset in enumerate(offsets):
        base = Path(folder, f"{prefix}{index}-{part}")
        if base.with_suffix(".jsonl").exists():
            with (
                open(base.with_suffix(".jsonl"), "rb") as lines_file,
                open(base.with_suffix(".lines"), "rb") as numbers_file,
            ):
                size = os.fstat(lines_file.fileno()).st_size
                for lines in _batches(lines_file, size):
                    numbers = np.fromfile(numbers_file, np.int64, len(lines)) + offset
                    yield numbers.tolist(), lines


def _judged(job: _Job, operations: list[Operation], numbers: list[int], part: int) -> _Part:
    """What the joined verdict needs of one part's operations, judged."""
    verdict, columns = judge(operations, job.policy, unjudged=job.unjudged)
    kept = _Part(operations=len(operations), inconclusive=verdict.inconclusive[:MAX_WITNESSES])
    for violation in verdict.violations:
        kept.found[violation.kind] = (violation.count, violation.witnesses[:MAX_WITNESSES])
    listed = {w.key for _, ws in kept.found.values() for w in ws}
    listed |= {w.key for w in kept.inconclusive}
    kept.first_lines = _first_lines(operations, numbers, listed)
    metrics = verdict.metrics
    kept.outcomes, kept.keys = metrics["outcomes"], metrics["keys"]
    kept.processes = set(map(itemgetter(0), operations))
    kept.given_back = metrics.get("given_back", 0)
    accuracy = metrics.get("sliding_accuracy", {})
    kept.accuracy = {k: v for k, v in accuracy.items() if k != "disagreement_rate"}
    ordered = latencies(columns)
    kept.latencies = [LatencyFile.written(os.path.join(job.folder, f"latencies-{part}"), ordered)]
    kept.timed, kept.slowest = len(ordered), float(ordered[-1]) if len(ordered) else 0.0
    kept.owners = _owners(operations, numbers)
    return kept


def _first_lines(operations: list[Operation], numbers: list[int], keys: set[str]) -> dict[str, int]:
    firsts: dict[str, int] = {}
    if keys:
        for op, number in zip(operations, numbers, strict=True):
            if op.key in keys and op.key not in firsts:
                firsts[op.key] = number
                if len(firsts) == len(keys):
                    break
    return firsts


def _owners(operations: list[Operation], numbers: list[int]) -> Owners:
    """For each Redis key an operation recorded, each identity's first operation on it."""
    owners: Owners = {}
    if not any(map(itemgetter(6), operations)):  # ``keys``: recorded by few drivers
        return owners
    for op, number in zip(operations, numbers, strict=True):
        for key in op.keys:
            owners.setdefault(key, {}).setdefault(op.key, (number, op))
    return owners


def _joined(
    parts: list[_Part],
    policy: Policy,
    ttls: Mapping[str, float] | None,
    unjudged: Mapping[str, str] | None,
) -> Verdict:
    """One verdict from the parts': what ``check`` makes of the whole history."""
    verdict = check([], policy, ttls, unjudged=unjudged)  # what is checked; the key snapshot's
    verdict.operations = sum(part.operations for part in parts)
    found = {v.kind: v for v in verdict.violations}
    for kind in verdict.checked:
        if kind == COLLISION:
            owners: Owners = {}
            for part in parts:
                for key, by_identity in part.owners.items():
                    owners.setdefault(key, {}).update(by_identity)  # identities: one part each
            witnesses = collision_witnesses(
                {key: _in_order(by_identity) for key, by_identity in owners.items()}
            )
            if witnesses:
                found[kind] = Violation(kind, witnesses)
        elif kind not in found:
            counted = [part.found[kind] for part in parts if kind in part.found]
            if counted:
                listed = _first_listed(
                    [(part, part.found[kind][1]) for part in parts if kind in part.found]
                )
                found[kind] = Violation(kind, listed, recorded=sum(c for c, _ in counted))
    verdict.violations = [found[kind] for kind in verdict.checked if kind in found]
    verdict.inconclusive = _first_listed([(part, part.inconclusive) for part in parts])
    verdict.metrics = _metrics(parts, policy)
    return verdict


def _in_order(by_identity: dict[str, tuple[int, Operation]]) -> dict[str, Operation]:
    """Each identity's first operation, in the order of their lines."""
    ordered = sorted(by_identity.items(), key=lambda item: item[1][0])
    return {identity: op for identity, (_, op) in ordered}


def _first_listed(listings: Iterable[tuple[_Part, list[Witness]]]) -> list[Witness]:
    """The first ``MAX_WITNESSES`` of the parts' witnesses, key by key in the order the keys
    first appear in the file (each part's already are)."""
    streams = [
        [(part.first_lines.get(w.key, math.inf), n, w) for n, w in enumerate(ws)]
        for part, ws in listings
    ]
    merged = heapq.merge(*streams, key=lambda entry: (entry[0], entry[1]))
    return [witness for _, _, witness in itertools.islice(merged, MAX_WITNESSES)]


def _metrics(parts: list[_Part], policy: Policy) -> dict[str, Any]:
    outcomes: dict[str, int] = {}
    for part in parts:
        for outcome, count in part.outcomes.items():
            outcomes[outcome] = outcomes.get(outcome, 0) + count
    files = [file for part in parts for file in part.latencies]
    total = sum(part.timed for part in parts)
    metrics: dict[str, Any] = {
        "outcomes": dict(sorted(outcomes.items())),
        "keys": sum(part.keys for part in parts),
        "processes": len(set().union(*(part.processes for part in parts))),
        "latency_ms": {f"p{p:g}": nearest_rank(files, total, p) * 1000 for p in PERCENTILES}
        | {"max": max((part.slowest for part in parts), default=0.0) * 1000},
    }
    given_back = sum(part.given_back for part in parts)
    if given_back:
        metrics["given_back"] = given_back
    if policy.kind == "sliding-counter":
        metrics["sliding_accuracy"] = disagreement(
            *(
                sum(part.accuracy.get(name, 0) for part in parts)
                for name in ("decisions", "wrongly_allowed", "wrongly_rejected")
            )
        )
    return metrics
