"""A limiter that is a program (``exec:COMMAND``), raced: OS processes, every command held at a
proxy of their own, each on a clock file of its own. Each verdict as its in-process twin's."""

import shlex
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from ratelimit_harness.harness.cli import main
from ratelimit_harness.harness.explorer.instances.process import POOL, SPARES
from ratelimit_harness.harness.explorer.schedule.actions import (
    Action,
    Advance,
    Crash,
    Skew,
    Step,
    Through,
)
from ratelimit_harness.harness.explorer.schedule.run import (
    Run,
    RunResult,
    Setup,
    run_actions,
    run_schedule,
    scheduled,
)
from ratelimit_harness.harness.explorer.search.explore import explore
from ratelimit_harness.harness.explorer.trace import load, replay, save
from ratelimit_harness.harness.provision import RedisServer
from ratelimit_harness.limiters import Policy
from ratelimit_harness.limiters.js_catalogue import JS_CATALOGUE
from ratelimit_harness.limiters.program import EXEC
from tests.limiters.js_programs import require_programs

pytestmark = pytest.mark.integration
PROGRAMS = Path(__file__).parents[2] / "limiters" / "programs"
FIXED = Policy.parse("fixed-window:limit=1,window=10")
FIRST = Policy.parse("fixed-window:limit=1,window=10,anchor=first")


def program(name: str) -> str:
    return f"exec:{sys.executable} {PROGRAMS / name}"


@pytest.fixture(autouse=True)
def no_programs_left() -> Iterator[None]:
    yield
    POOL.close()


def test_the_get_set_race_of_a_program_is_found_shrunk_and_replayed(
    virtual_server: RedisServer, tmp_path: Path
) -> None:
    url, clock = virtual_server.url, virtual_server.clock_file
    setup = Setup(program("get_set.py"), FIXED, 2, url, clock_file=clock)
    found = explore(setup, wanted=lambda v: "over-admission" in v.kinds, max_examples=200, seed=1)
    assert found.found is not None
    commands = [step.what.split()[0] for step in found.found.trace if step.kind == "command"]
    assert commands == ["GET", "GET", "SET", "SET"]  # the program's commands, as the proxy saw
    path = tmp_path / "trace.json"
    save(path, setup, found.found, found.verdict)  # type: ignore[arg-type]
    _, again = replay(load(path), url, clock_file=clock)
    assert "over-admission" in again.kinds


def test_a_correct_program_is_clean_under_every_fault(virtual_server: RedisServer) -> None:
    url, clock = virtual_server.url, virtual_server.clock_file
    setup = Setup(program("lua_window.py"), FIRST, 2, url, clock_file=clock)
    found = explore(setup, max_examples=60, seed=2)
    assert found.found is None, found.verdict
    assert found.examples >= 60


def test_a_crash_between_incr_and_expire_leaves_the_key_immortal_and_expire_never_sent(
    virtual_server: RedisServer,
) -> None:
    url, clock = virtual_server.url, virtual_server.clock_file
    setup = Setup(program("crash_after_incr.py"), FIXED, 2, url, clock_file=clock)
    actions: list[Action] = [Step(0, "user:1"), Step(0, "user:1"), Crash(0)]  # EXPIRE held
    result, verdict = run_schedule(setup, actions)
    sent = [(step.what, step.reply) for step in result.trace if step.kind == "command"]
    # redis-py's incr is INCRBY 1; the EXPIRE held when the program was killed never went
    assert sent == [("INCRBY ratelimit:{user:1}:incr-expire 1", "1")]
    assert result.ttls == {"ratelimit:{user:1}:incr-expire": -1}
    assert verdict.kinds == {"immortal-key"}


def test_a_programs_clock_is_the_instances_skew_included(virtual_server: RedisServer) -> None:
    """Time passes for every program; a skewed one reads its own offset (Python's time.time,
    through its vDSO), and the decision's ``now`` says so."""
    url, clock = virtual_server.url, virtual_server.clock_file
    setup = Setup(f"exec:{sys.executable} {PROGRAMS / 'clock.py'}", FIXED, 2, url, clock_file=clock)
    actions: list[Action] = [
        *(Through(0, "a"), Advance(2.5), Skew(1, -0.25), Through(1, "a"), Through(0, "a"))
    ]
    result, _ = run_schedule(setup, actions)
    assert [op.process for op in result.history] == ["app-0", "app-1", "app-0"]
    nows = [op.now for op in result.history]
    assert nows[0] is not None
    assert nows == pytest.approx([nows[0], nows[0] + 2.25, nows[0] + 2.5], abs=1e-6)


def test_a_program_that_answers_junk_fails_that_check_and_goes_on(
    virtual_server: RedisServer,
) -> None:
    url, clock = virtual_server.url, virtual_server.clock_file
    setup = Setup(program("crash_after_incr.py"), FIXED, 1, url, clock_file=clock)
    result, _ = run_schedule(setup, [Through(0, "junk"), Through(0, "user:1")])
    assert result.errors == ["app-0 check(junk): answered 'maybe': not allowed, rejected or JSON"]
    assert result.decisions == 1


def test_programs_outlive_a_run_and_a_crashed_one_is_let_finish_after_it(
    virtual_server: RedisServer,
) -> None:
    """Where the next run flushes, a crash only cuts a program off: what it holds reaches Redis
    once the run is over, and the program goes on in the next run."""
    url, clock = virtual_server.url, virtual_server.clock_file
    setup = Setup(program("crash_after_incr.py"), FIXED, 2, url, clock_file=clock)
    run_schedule(setup, [Through(0, "a"), Through(1, "b")])
    first = POOL.resting()
    assert sorted(first) == [0, 1]
    crashed, _ = run_schedule(setup, [Step(0, "a"), Step(0, "a"), Crash(0), Through(1, "b")])
    assert crashed.ttls["ratelimit:{a}:incr-expire"] == -1  # its EXPIRE, held, came after
    assert [op.outcome for op in crashed.history] == ["unknown", "allowed"]
    assert POOL.resting() == first
    after, _ = run_schedule(setup, [Through(0, "a")])
    assert [op.outcome for op in after.history] == ["allowed"]  # on a flushed database
    assert POOL.resting() == first


def test_on_a_redis_not_flushed_a_crashed_program_is_killed_and_started_anew(
    virtual_server: RedisServer,
) -> None:
    url, clock = virtual_server.url, virtual_server.clock_file
    setup = Setup(program("crash_after_incr.py"), FIXED, 2, url, flush=False, clock_file=clock)
    # identities no other test uses: keys of earlier runs stay on a database not flushed
    run_schedule(setup, [Through(0, "kept-a"), Through(1, "kept-b")])
    first = POOL.resting()
    run_schedule(setup, [Step(0, "kept-c"), Step(0, "kept-c"), Crash(0), Through(1, "kept-b")])
    assert POOL.resting() == {1: first[1]}  # at rest, it went on; the crashed one is gone
    run_schedule(setup, [Through(0, "kept-d")])
    third = POOL.resting()
    assert third[1] == first[1]
    assert third[0] not in (first[0], first[1])  # started anew


def test_a_program_that_exits_fails_that_check_and_is_started_again(
    virtual_server: RedisServer,
) -> None:
    url, clock = virtual_server.url, virtual_server.clock_file
    counting = f"exec:{sys.executable} {PROGRAMS / 'counting.py'}"
    setup = Setup(counting, FIXED, 1, url, clock_file=clock)
    result, _ = run_schedule(setup, [Through(0, "die"), Through(0, "a")])
    (failed,) = result.errors
    assert "ended with exit code 3: giving up: asked to die" in failed
    assert [op.outcome for op in result.history] == ["error", "allowed"]  # it sent nothing


def test_a_program_that_never_answers_is_exit_2_with_its_last_words(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ["race", "--limiter", program("refuses.py"), "--policy", str(FIXED)]
    assert main([*args, "--max-examples", "5", "--seed", "1"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()[-1:]
    assert "never returned a decision" in line
    assert "ended with exit code 4: RuntimeError: no licence for this limiter" in line


def test_a_race_keeps_each_programs_stderr_beside_its_trace(tmp_path: Path) -> None:
    trace = tmp_path / "trace.json"
    args = ["race", "--limiter", program("counting.py"), "--policy", str(FIXED), "--seed", "1"]
    assert main([*args, "--nemesis", "none", "--max-examples", "30", "--trace", str(trace)]) == 1
    said = (tmp_path / "app-1.stderr").read_text()
    assert said.startswith("instance 1 on redis://127.0.0.1:")  # its proxy's address
    assert trace.exists()


REPEATS = 20  # runs of one schedule that must all come out alike
FIRE_AND_FORGET = "ratelimit:{a}:fire-and-forget"


def lanes(result: RunResult) -> list[tuple[str, str, str]]:
    """A run's trace as what a person reads of it: each step's lane, what and reply."""
    return [(step.lane, step.what, step.reply) for step in result.trace]


def test_a_command_sent_just_before_the_answer_is_a_step_of_its_own_request(
    virtual_server: RedisServer,
) -> None:
    """The program writes EXPIRE and answers without waiting for it: the EXPIRE goes before
    the decision, in the same request, every time; time passing after the request finds its
    key expired (were the EXPIRE held into the next request, that one would be refused)."""
    url, clock = virtual_server.url, virtual_server.clock_file
    setup = Setup(program("fire_and_forget.py"), FIXED, 1, url, clock_file=clock)
    actions: list[Action] = [Through(0, "a"), Advance(11), Through(0, "a")]
    request = [
        ("app-0", "check(a)", ""),
        ("app-0", f"INCRBY {FIRE_AND_FORGET} 1", "1"),
        ("app-0", f"EXPIRE {FIRE_AND_FORGET} 10", "1"),
        ("app-0", "check(a)", "allowed"),
    ]
    for _ in range(REPEATS):
        result, verdict = run_schedule(setup, actions)
        assert lanes(result) == [*request, ("-", "time passes 11 s", ""), *request]
        assert [op.outcome for op in result.history] == ["allowed", "allowed"]
        assert verdict.valid


def test_a_crash_while_a_trailing_command_is_held_drops_it_every_time(
    virtual_server: RedisServer,
) -> None:
    """Other instances go while the EXPIRE is held; the crash then drops it: the key is left
    with no TTL, and the request (its answer lost with the process) is unknown."""
    url, clock = virtual_server.url, virtual_server.clock_file
    setup = Setup(program("fire_and_forget.py"), FIXED, 2, url, clock_file=clock)
    actions: list[Action] = [Step(0, "a"), Step(0, "a"), Through(1, "a"), Crash(0)]
    for _ in range(REPEATS):
        result, verdict = run_schedule(setup, actions)
        assert lanes(result) == [
            ("app-0", "check(a)", ""),
            ("app-0", f"INCRBY {FIRE_AND_FORGET} 1", "1"),
            ("app-1", "check(a)", ""),
            ("app-1", f"INCRBY {FIRE_AND_FORGET} 1", "2"),
            ("app-1", "check(a)", "rejected"),
            ("app-0", "crashes", ""),
        ]
        assert [op.outcome for op in result.history] == ["rejected", "unknown"]
        assert result.ttls == {FIRE_AND_FORGET: -1}
        assert verdict.kinds == {"immortal-key"}


INCR_EXPIRE = "ratelimit:{a}:incr-expire"


def test_a_request_inside_at_the_schedules_end_is_let_finish_once_the_run_has_read_redis(
    virtual_server: RedisServer,
) -> None:
    url, clock = virtual_server.url, virtual_server.clock_file
    setup = Setup(program("crash_after_incr.py"), FIXED, 1, url, clock_file=clock)
    result, verdict = run_schedule(setup, [Step(0, "a"), Step(0, "a")])  # EXPIRE held at the end
    assert result.trace[-1].what == f"schedule ends: never sends EXPIRE {INCR_EXPIRE} 10"
    assert [op.outcome for op in result.history] == ["unknown"]
    assert result.ttls == {INCR_EXPIRE: -1}  # Redis as the run read it: the EXPIRE never sent
    assert verdict.kinds == {"immortal-key"}
    drained = POOL.resting()
    assert list(drained) == [0]  # it finished the request after the run: at rest, not killed
    admin = redis.Redis.from_url(url)
    try:
        assert admin.ttl(INCR_EXPIRE) == 10  # its EXPIRE went, for the next run to flush
        again, _ = run_schedule(setup, [Through(0, "a")])
        assert POOL.resting() == drained
        assert [op.outcome for op in again.history] == ["allowed"]  # on a flushed database
    finally:
        admin.close()


def test_where_the_database_is_not_the_harnesss_to_flush_such_a_program_is_killed(
    virtual_server: RedisServer,
) -> None:
    url, clock = virtual_server.url, virtual_server.clock_file
    setup = Setup(program("crash_after_incr.py"), FIXED, 1, url, flush=False, clock_file=clock)
    key = "ratelimit:{unflushed}:incr-expire"
    result, _ = run_schedule(setup, [Step(0, "unflushed"), Step(0, "unflushed")])
    assert result.ttls == {key: -1}
    assert POOL.resting() == {}
    admin = redis.Redis.from_url(url)
    try:
        assert admin.exists(key) == 0  # the run removed its key, and nothing came after
    finally:
        admin.close()


def test_a_program_started_anew_is_a_spare_booted_beforehand(virtual_server: RedisServer) -> None:
    url, clock = virtual_server.url, virtual_server.clock_file
    # killed by its crash (on a database not flushed), so started anew
    setup = Setup(program("crash_after_incr.py"), FIXED, 1, url, flush=False, clock_file=clock)
    crash: list[Action] = [Step(0, "a"), Crash(0)]
    run_schedule(setup, crash)
    assert POOL.spares() == {}  # the first program of its key: none needed yet
    run_schedule(setup, crash)  # the second is started anew: spares beside it, from now on
    spares = POOL.spares()[0]
    assert len(spares) == SPARES
    run_schedule(setup, [Through(0, "a")])
    assert POOL.resting() == {0: spares[0]}  # the oldest spare went on
    assert POOL.spares()[0][: SPARES - 1] == spares[1:]  # and another was started


def test_a_spares_connections_to_redis_are_not_counted_unseen(virtual_server: RedisServer) -> None:
    """ioredis connects and sends INFO as it boots: a spare booting while a run counts what
    clients it cannot see sent is the run's own proxy's, not one of those."""
    require_programs()
    url, clock = virtual_server.url, virtual_server.clock_file
    node = EXEC + shlex.join(JS_CATALOGUE["fixed-window-incr-expire"].command())
    # killed by its crash (on a database not flushed), so started anew beside its spares
    setup = Setup(node, FIXED, 1, url, flush=False, clock_file=clock, count_unseen=True)
    admin = redis.Redis.from_url(url)
    try:
        with scheduled():
            for _ in range(2):
                run_actions(setup, admin, [Step(0, "a"), Crash(0)])
            run = Run(setup, admin)  # takes a spare and starts the next, booting now
            run.apply(Through(0, "a"))
            deadline = time.monotonic() + 10  # till every spare has its connection to Redis
            while len(POOL.upstream_addresses()) < SPARES and time.monotonic() < deadline:
                time.sleep(0.01)
            assert len(POOL.upstream_addresses()) == SPARES, "the spares never reached Redis"
            result = run.finish()
    finally:
        admin.close()
    assert result.unseen is not None
    assert result.unseen.commands == 0, result.unseen.first


def test_race_exec_is_limiter_exec(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    command = f"{sys.executable} {PROGRAMS / 'get_set.py'}"
    args = ["race", "--exec", command, "--policy", str(FIXED), "--nemesis", "none"]
    trace = str(tmp_path / "trace.json")
    assert main([*args, "--max-examples", "50", "--seed", "1", "--trace", trace]) == 1
    assert f"exec:{command} with {FIXED}: over-admission" in capsys.readouterr().out


def test_on_a_redis_that_keeps_real_time_a_programs_keys_keep_their_ttl(
    redis_server: RedisServer,
) -> None:
    # no clock file: the explorer stretches the TTLs it sees, counted from when each command was
    # sent in real time (a program's once cut its keys to 1 ms, and each request found none)
    line_program = f"exec:{sys.executable} -m ratelimit_harness.limiters.line_program"
    setup = Setup(f"{line_program} fixed-window-incr-expire", FIXED, 1, redis_server.url)
    result, _ = run_schedule(setup, [Through(0, "user:1"), Through(0, "user:1")])
    assert [op.outcome.value for op in result.history] == ["allowed", "rejected"]
    (ttl,) = result.ttls.values()
    assert 9 < ttl < 10.1  # the window's, in the schedule's seconds (a hair more: never early)
