"""The chapter's JavaScript limiters: each a program in ``limiters/js/`` on the line protocol
(``limiters/js/README.md``), the policy it is judged by, and the flaws the harness must catch in
it, each with the faults its shortest schedule needs and the reason.

Every program is the chapter's code of one Python catalogue entry, its twin
(``limiters.catalogue``): the twin's expected flaws are the reference, and its reasons are
these programs' reasons too, unless ``reasons`` says what differs. The faults are those the
race explorer's shortest schedule needed for the twin (``race-test --seed 1``, 2026-12-01):
none (interleavings and time passing between requests), ``crash`` (an instance dies: SIGKILL
for a program), ``stall`` (time passes inside a request, between its round trips), ``skew``
(an instance's clock is off: a clock file of its own, read through the program's vDSO).
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ratelimit_harness.cache import user_cache
from ratelimit_harness.limiters.catalogue import CATALOGUE, Flaw
from ratelimit_harness.limiters.policy import Policy

HOME = Path(__file__).resolve().parent / "js"  # the programs as shipped: a checkout's, a wheel's
NPM_TIMEOUT = 300  # seconds for npm ci to install ioredis
FAULTS = frozenset({"crash", "stall", "skew"})
NONE: frozenset[str] = frozenset()
CRASH, STALL, SKEW = frozenset({"crash"}), frozenset({"stall"}), frozenset({"skew"})


@dataclass(frozen=True)
class Program:
    name: str  # also its file, limiters/js/<name>.js, and the tag in its keys
    policy: str  # an example policy of the kind it is judged by
    summary: str
    twin: str  # the Python catalogue entry of the same chapter code
    needs: Mapping[Flaw, frozenset[str]] = field(default_factory=dict)  # flaw -> its faults
    reasons: Mapping[Flaw, str] = field(default_factory=dict)  # where the twin's reason is not
    note: str = ""

    @property
    def path(self) -> Path:
        return home() / f"{self.name}.js"

    @property
    def promise(self) -> str:
        return Policy.parse(self.policy).promise

    @property
    def flaws(self) -> Mapping[Flaw, str]:
        """Each expected flaw -> how it arises (the twin's reason unless ``reasons`` has one)."""
        twin = CATALOGUE[self.twin].flaws
        return {flaw: self.reasons.get(flaw) or twin[flaw] for flaw in self.needs}

    def command(self, node: str = "node") -> tuple[str, ...]:
        """What starts one instance (with REDIS_URL, RATELIMIT_POLICY, RATELIMIT_INSTANCE)."""
        return (node, str(self.path))


def unavailable() -> str | None:
    """Why the programs cannot run here (no ``node``, or ioredis not installed), else None."""
    if shutil.which("node") is None:
        return "node is not installed (apt-get install nodejs npm)"
    if not _has_ioredis(home()):
        return f"ioredis is not installed in {HOME / 'node_modules'} (make js, or install())"
    return None


def home() -> Path:
    """Where the programs run from. In a checkout, after ``make js``, that is where they are
    (``HOME``), beside their own ioredis. A wheel installs them without it: they run from a copy
    in the user's cache once ``install`` has made it."""
    if _has_ioredis(HOME):
        return HOME
    copy = _cached_copy()
    return copy if _has_ioredis(copy) else HOME


def install(say: Callable[[str], None]) -> str | None:
    """Make the programs runnable here: where they lack ioredis (a wheel's), copy them into the
    user's cache and install it there, once, with ``npm ci`` from their lock file. ``say`` is
    told before npm runs. Returns why they still cannot run, or None."""
    if shutil.which("node") is None or _has_ioredis(home()):
        return unavailable()
    npm = shutil.which("npm")
    if npm is None:
        return "npm is not installed, to install ioredis (apt-get install npm)"
    target = _cached_copy()
    partial = target.with_name(f".{target.name}.{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    shutil.copytree(HOME, partial, ignore=shutil.ignore_patterns("node_modules"))
    say(f"installing ioredis for the JavaScript limiters into {target} (npm ci, once)")
    command = [npm, "ci", "--omit=dev", "--no-audit", "--no-fund", "--loglevel=error"]
    try:
        done = subprocess.run(
            command, cwd=partial, capture_output=True, text=True, timeout=NPM_TIMEOUT, check=False
        )
        if done.returncode != 0:
            said = (done.stderr.strip().splitlines() or ["no message"])[-1]
            return f"npm ci could not install ioredis: {said}"
        os.replace(partial, target)  # at once: a process never sees half a copy
    except subprocess.TimeoutExpired:
        return f"npm ci did not install ioredis in {NPM_TIMEOUT} s"
    except OSError:
        pass  # another process installed it first: its copy is as good
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return unavailable()


def _has_ioredis(directory: Path) -> bool:
    return (directory / "node_modules" / "ioredis").is_dir()


def _cached_copy() -> Path:
    """The programs' copy in the user's cache, named by a digest of what is shipped: a new
    release of them gets a copy of its own."""
    return user_cache() / f"js-{_digest(HOME)}"


@functools.cache
def _digest(shipped: Path) -> str:
    """A digest of the programs in ``shipped`` (their names and bytes), read once."""
    digest = hashlib.sha256()
    for path in sorted(shipped.rglob("*")):
        if path.is_file() and "node_modules" not in path.relative_to(shipped).parts:
            digest.update(path.relative_to(shipped).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


OVER, WRONG, IMMORTAL = Flaw.OVER_ADMISSION, Flaw.WRONGFUL_REJECTION, Flaw.IMMORTAL_KEY
FIXED, SLIDING = "fixed-window:limit=5,window=2", "sliding-window:limit=5,window=2"
COUNTER, BUCKET = "sliding-counter:limit=5,window=2", "token-bucket:capacity=5,rate=2.5"
PIPELINE_NOTE = (
    "ioredis sends a pipeline in one write: the immortal key needs the proxy to pass its "
    "commands one at a time, so that a crash can fall between ZADD (or INCR) and EXPIRE"
)

PROGRAMS = (
    Program(
        "naive-get-set",
        FIXED,
        "Part 7 WRONG: GET, compare, SET EX",
        "naive-get-set",
        {OVER: NONE, WRONG: NONE},
        note="SET's EX is the policy's window where the chapter writes 60, as its twin's PX",
    ),
    Program(
        "fixed-window-incr-expire",
        FIXED,
        "Part 2: INCR, then EXPIRE if count === 1",
        "fixed-window-incr-expire",
        {IMMORTAL: CRASH, OVER: SKEW, WRONG: SKEW},
        note="Part 2 floors Date.now() to whole seconds before it finds the window: the same "
        "window as its twin's for the whole-second windows it takes",
    ),
    Program(
        "fixed-window-setnx-incr",
        FIXED,
        "Part 7 'robust': SET NX EX, then INCR",
        "fixed-window-setnx-incr",
        {IMMORTAL: STALL, OVER: SKEW, WRONG: SKEW},
    ),
    Program(
        "fixed-window-first-lua",
        "fixed-window:limit=5,window=2,anchor=first",
        "Part 7's Lua check-and-increment, keyed by the identity",
        "fixed-window-first-lua",
        note="the chapter leaves the key to the reader: keyed by the identity alone, the window "
        "is the key's TTL from its first admission, on the server's clock (its twin keeps the "
        "window's start in a hash instead); this script, raced in Python with "
        "fixed-window:limit=1,window=10,anchor=first, came out clean in 1002 schedules for each "
        "of seeds 1, 2, 3. Keyed by Date.now()'s window as the lines before it are, it "
        "over-admits (skew) and wrongly rejects (skew, stall) as Part 2 does",
    ),
    Program(
        "sliding-log-pipeline",
        SLIDING,
        "Part 3 as written: pipelined log, random-member ZREM undo",
        "sliding-log-pipeline",
        {WRONG: NONE, OVER: SKEW, IMMORTAL: CRASH},
        note=f"{PIPELINE_NOTE}; an error reply inside the pipeline admits (its ZCARD reads as "
        "undefined), as the chapter's code does",
    ),
    Program(
        "sliding-counter-mget-incr",
        COUNTER,
        "Part 4 as written: MGET, decide, INCR",
        "sliding-counter-mget-incr",
        {OVER: NONE, WRONG: SKEW, IMMORTAL: CRASH},
        note=PIPELINE_NOTE,
    ),
    Program(
        "token-bucket-client-clock",
        BUCKET,
        "Part 5's Lua, now from each instance's Date.now()",
        "token-bucket-client-clock",
        {OVER: SKEW},
        note="now is Date.now() / 1000, to the millisecond; its twin passes microseconds",
    ),
)

JS_CATALOGUE: Mapping[str, Program] = {program.name: program for program in PROGRAMS}
