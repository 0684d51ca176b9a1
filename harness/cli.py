"""The command line, ``ratelimit-harness COMMAND``: its arguments and exit codes only. Each
command's work lives in the part it drives; what its help says beside the options (a summary, an
example, the exit codes) lives in ``usage.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import redis

from ratelimit_harness import __version__
from ratelimit_harness.harness import listing
from ratelimit_harness.harness.checkers.partitions import PART_BYTES, check_file
from ratelimit_harness.harness.errors import (
    BadArgument,
    EnvironmentFailure,
    HarnessError,
    LimiterError,
    described,
    existing,
    writing,
)
from ratelimit_harness.harness.history import HistoryError
from ratelimit_harness.harness.history.snapshot import read_snapshot
from ratelimit_harness.harness.progress import stages
from ratelimit_harness.harness.provision import Unavailable, provision
from ratelimit_harness.harness.provision.doctor import diagnose
from ratelimit_harness.harness.rundir import never_judged_load, rejudge
from ratelimit_harness.harness.terminate import exit_on_sigterm, pause
from ratelimit_harness.harness.usage import (
    BAD_INPUT,
    COMMANDS,
    ENVIRONMENT,
    INTERRUPTED,
    TOP_CODES,
    exit_codes,
)
from ratelimit_harness.limiters import (
    CATALOGUE,
    Policy,
    PolicyError,
    ProgramError,
    UnknownLimiter,
    resolve,
)
from ratelimit_harness.limiters.plugin import PluginError
from ratelimit_harness.limiters.program import EXEC


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    """Run the command line ``argv`` (default: this process's arguments); its exit code. ``prog``
    is how the user started it (default: the name of the script that runs)."""
    exit_on_sigterm()  # so servers are stopped on TERM
    importable_here()
    args = parser(prog or os.path.basename(sys.argv[0]) or "ratelimit-harness").parse_args(argv)
    try:
        return int(args.run(args))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return INTERRUPTED
    except Exception as error:
        code = exit_code(error)
        if code is None:
            raise  # a bug of the harness: shown with its traceback
        print(f"error: {error}", file=sys.stderr)
        return code


def importable_here() -> None:
    """Put the current directory on the path, as ``python -m`` does: a plug-in
    ``mymod:factory`` beside the user is found however the harness was started (the
    ``ratelimit-harness`` script puts only its own directory there). The processes it starts
    run ``python -m`` in the same directory, so they find it too."""
    here = os.getcwd()
    if "" not in sys.path and here not in sys.path:
        sys.path.insert(0, here)


def exit_code(error: Exception) -> int | None:
    """The exit code for ``error``, said in one line: 3 when the environment failed (no Redis,
    Redis stopped answering, Docker refused), 2 for bad input. None for anything else, which is
    a bug of the harness."""
    if isinstance(error, Unavailable | EnvironmentFailure):
        return ENVIRONMENT
    if isinstance(error, redis.RedisError) and not isinstance(error, redis.ResponseError):
        return ENVIRONMENT  # a lost connection, a timeout: Redis, not the input, failed
    bad_input = (
        HarnessError,
        PolicyError,
        PluginError,
        ProgramError,
        UnknownLimiter,
        HistoryError,
        redis.ResponseError,  # an error reply to the limiter's own command
    )
    return BAD_INPUT if isinstance(error, bad_input) else None


def parser(prog: str = "ratelimit-harness") -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog=prog,
        description="Load-testing and correctness verification for Redis-backed rate limiters.",
        epilog=f"'{prog} COMMAND --help' shows a command's options, an example and what each "
        f"exit code means for it.\n\n{exit_codes(TOP_CODES)}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    top.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str) -> argparse.ArgumentParser:
        usage = COMMANDS[name]
        return commands.add_parser(
            name,
            help=usage.summary,
            description=usage.summary,
            epilog=usage.epilog(prog),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )

    doctor = command("doctor")
    doctor.add_argument("--redis-url", help="also check this URL (default: $REDIS_URL)")
    doctor.set_defaults(run=run_doctor)

    catalogue = command("limiters")
    catalogue.set_defaults(run=lambda _: print(listing.catalogue()) or 0)

    probe = command("probe")
    add_limiter_option(probe)
    probe.add_argument("--policy", help="policy spec (default: the catalogue's example)")
    probe.add_argument("--requests", type=int, default=10, help="how many (default: 10)")
    probe.add_argument(
        "--interval", type=float, default=0.0, help="seconds between requests (default: 0)"
    )
    probe.add_argument("--identity", default="user:1", help="the key limited (default: user:1)")
    add_redis_options(probe)
    probe.set_defaults(run=run_probe)

    judge = command("check")
    judge.add_argument(
        "history",
        help="JSON Lines history (see docs/verdicts.md, Histories), or a run directory: every "
        "history it judged is judged again and held to the verdict it recorded",
    )
    judge.add_argument("--policy", help="policy spec, e.g. fixed-window:limit=5,window=2")
    judge.add_argument("--keys", help="JSON Lines snapshot of the keys left in Redis, with TTLs")
    judge.add_argument("--json", dest="json_out", help="also write the verdict as JSON here")
    judge.add_argument(
        "--workers",
        type=int,
        help="processes that judge a large history in parts, by key (default: one per core)",
    )
    judge.add_argument(
        "--part-mb",
        type=int,
        default=PART_BYTES >> 20,
        help="a history larger than this many MB (about 9,000 operations each) is judged in "
        "parts of about this size, each held in memory by one worker; one identity larger "
        "than this is judged as a stream where its policy allows (see docs/verdicts.md) "
        f"(default: {PART_BYTES >> 20})",
    )
    judge.set_defaults(run=run_check)

    add_race_command(command("race"))

    again = command("replay")
    again.add_argument("trace", help="a trace file saved by race or race-test")
    add_redis_options(again)
    add_flush_option(again)
    again.set_defaults(run=explorer_command("replay"))

    campaign = command("race-test")
    add_search_options(campaign)
    campaign.add_argument(
        "--stress-seconds",
        type=float,
        default=1.0,
        help="per limiter, seconds of a naive threaded stress test for contrast; 0: none "
        "(default: 1)",
    )
    campaign.add_argument(
        "--limiters",
        metavar="NAME,...",
        help="race these rows only: catalogue names, 'boundary attack', NAME.js for a "
        "JavaScript program (default: every row)",
    )
    campaign.add_argument(
        "--jobs",
        type=int,
        help="rows raced at once, each on a Redis of its own (default: every core)",
    )
    add_redis_options(campaign)
    add_flush_option(campaign)
    campaign.set_defaults(run=explorer_command("race_test"))

    add_load_commands(command("load"), command("serve"))

    add_study_command(command("study"))

    report = command("report")
    report.add_argument(
        "runs",
        nargs="+",
        help="a run directory (load, race-test) or a saved race; several load runs of one "
        "limiter: violations against instances",
    )
    report.add_argument("--out", help="where to write (default: the run directory)")
    report.set_defaults(run=run_report)
    return top


def add_limiter_option(command: argparse.ArgumentParser) -> None:
    """``--limiter NAME``, or ``--exec COMMAND`` for ``--limiter exec:COMMAND``."""
    which = command.add_mutually_exclusive_group(required=True)
    which.add_argument(
        "--limiter", help="catalogue name, module:attribute, or exec:COMMAND (a program)"
    )
    which.add_argument(
        "--exec",
        dest="limiter",
        type=lambda command: EXEC + command,
        metavar="COMMAND",
        help="a limiter that is a program on the line protocol, in any language",
    )


def add_race_command(race: argparse.ArgumentParser) -> None:
    add_limiter_option(race)
    race.add_argument("--policy", help="policy spec (default: a small one of the limiter's kind)")
    race.add_argument("--instances", type=int, default=2, help="app instances (default: 2)")
    race.add_argument(
        "--nemesis",
        help="the faults a schedule may use: none, or some of crash,stall,skew (default: all); "
        "interleavings and time passing between requests are always drawn",
    )
    race.add_argument(
        "--max-skew",
        type=float,
        help="the largest clock skew drawn, in seconds (default: a window; 0: no skew)",
    )
    race.add_argument(
        "--costs",
        help="what a request may cost, comma-separated: each request draws one, and the "
        "limiter is asked check(identity, cost) (default: 1; a weighted catalogue limiter's own)",
    )
    race.add_argument(
        "--give-back",
        action="store_true",
        help="give back every other admitted request, as if its work had failed: the limiter "
        "is asked refund(identity, decision) (on for a catalogue limiter raced so)",
    )
    add_search_options(race)
    race.add_argument("--trace", help="where to save the shrunk trace (default: runs/...)")
    add_unscheduled_option(race)
    add_real_clock_option(race)
    add_redis_options(race)
    add_flush_option(race)
    race.set_defaults(run=explorer_command("race"))


def add_study_command(measured: argparse.ArgumentParser) -> None:
    measured.add_argument(
        "--quick", action="store_true", help="small sizes, in seconds (for tests and CI)"
    )
    measured.add_argument("--seed", type=int, default=1, help="the workload's seed (default: 1)")
    add_redis_options(measured)
    measured.set_defaults(run=run_study)


def add_load_commands(swarm: argparse.ArgumentParser, system: argparse.ArgumentParser) -> None:
    add_system_options(swarm)
    served = swarm.add_mutually_exclusive_group()
    served.add_argument(
        "--service",
        metavar="COMMAND",
        help="start --instances copies of this HTTP service of your own (it serves on $PORT, "
        "limits with $REDIS_URL and $RATELIMIT_POLICY) instead of the harness's app",
    )
    # --exec is race's (a limiter on the line protocol): here it is only a hint to --service
    swarm.add_argument("--exec", dest="misplaced_exec", help=argparse.SUPPRESS)
    served.add_argument(
        "--target",
        metavar="URL,...",
        help="load these instances of a service already running instead of starting any "
        "(its Redis, to read the keys it left: --redis-url)",
    )
    swarm.add_argument("--users", type=int, default=40, help="Locust users (default: 40)")
    swarm.add_argument(
        "--spawn-rate", type=float, default=20, help="users started a second (default: 20)"
    )
    swarm.add_argument("--duration", type=float, help="seconds, headless (default: the web UI)")
    swarm.add_argument(
        "--web", action="store_true", help="the Locust web UI (default: on without --duration)"
    )
    swarm.add_argument(
        "--web-port", type=int, default=8089, help="web UI port on 127.0.0.1 (default: 8089)"
    )
    swarm.add_argument(
        "--locustfile", default="burst", help="a pattern of locustfiles/ or a path (default: burst)"
    )
    swarm.add_argument("--processes", type=int, default=1, help="Locust processes (default: 1)")
    swarm.add_argument(
        "--constant-rate",
        type=float,
        default=0.0,
        help="requests/s per user on a fixed schedule, latency from the intended send; 0: "
        "as fast as answered (default: 0)",
    )
    swarm.add_argument(
        "--nemesis",
        default="none",
        help="faults while the swarm runs, in turn: kill-redis, restart-redis, pause-redis, "
        "kill-instance, latency, partition, refuse, skew, failover (--cluster) "
        "(comma-separated) (default: none)",
    )
    swarm.add_argument(
        "--nemesis-every",
        type=float,
        default=5.0,
        help="seconds from one fault's beginning to the next's; later if undoing one was slow, "
        "so that the system always has --nemesis-every minus --nemesis-for without a fault "
        "(default: 5)",
    )
    swarm.add_argument(
        "--nemesis-for", type=float, default=2.0, help="seconds each lasts (default: 2)"
    )
    swarm.add_argument("--json", dest="json_out", help="also write the verdict as JSON here")
    swarm.set_defaults(run=load_command("load"))

    add_system_options(system)
    system.set_defaults(run=load_command("serve"))


def add_system_options(command: argparse.ArgumentParser) -> None:
    """The system under test: rules, instances, Redis."""
    command.add_argument("--limiter", help="the default endpoint's (/api/*) limiter")
    command.add_argument("--policy", help="the default endpoint's policy")
    command.add_argument("--judge-by", help="judge the default endpoint by this policy instead")
    command.add_argument(
        "--cost",
        help="what a request to the default endpoint costs: a whole number, or the header that "
        "carries each request's (default: 1)",
    )
    command.add_argument(
        "--refund",
        choices=("never", "failed"),  # harness.load.contract.rules' REFUND (imported when run)
        help="give back a request to the default endpoint that the app failed (4xx, 5xx: "
        "failed), or never (default: never)",
    )
    command.add_argument("--config", help="rules per endpoint, TOML (default: the built-in rules)")
    command.add_argument("--instances", type=int, default=4, help="app instances (default: 4)")
    command.add_argument("--cluster", action="store_true", help="a local Redis Cluster")
    command.add_argument(
        "--host",
        default="127.0.0.1",
        help="the address the instances listen on (default: 127.0.0.1)",
    )
    command.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow a --redis-url or --host that is not loopback",
    )
    add_redis_options(command)


def add_search_options(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--max-examples",
        type=int,
        help="schedules drawn at random per search, after as many of the bounded stage at most "
        "(default: the profile's)",
    )
    command.add_argument(
        "--profile",
        choices=("quick", "thorough"),
        default="quick",
        help="quick: 300 schedules a search; thorough: 1000 (the bounded stage's at most 400) "
        "(default: quick)",
    )
    command.add_argument(
        "--seed",
        type=int,
        help="the random stage's seed; without it, one derived from the limiter, the policy and "
        "the faults, so the same command gives the same verdict on every run",
    )
    command.add_argument("--json", dest="json_out", help="also write the result as JSON here")


def add_unscheduled_option(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--allow-unscheduled",
        action="store_true",
        help="judge a limiter even though Redis ran commands of it that the explorer could not "
        "see, so never scheduled (a raw socket, an unpatched client; without this: exit 2, "
        "with their count)",
    )


def add_real_clock_option(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--allow-real-clock",
        action="store_true",
        help="judge a limiter even though it reads a clock the explorer cannot move (a program, "
        "where ptrace is refused: exit 3 without this; one whose decisions report a time the "
        "schedule did not show: exit 2 without this): right only if it never decides by it",
    )


def add_redis_options(command: argparse.ArgumentParser) -> None:
    command.add_argument("--redis-url", help="use this Redis (default: $REDIS_URL, else start one)")
    command.add_argument(
        "--redis",
        choices=("auto", "container", "embedded"),
        help="how to start a Redis when no URL is given (default: $HARNESS_REDIS, else auto)",
    )


def add_flush_option(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--flush",
        action="store_true",
        help="erase a given Redis' database between schedules (without it, a database that "
        "is not empty is refused and only the keys the run made are removed)",
    )


def run_report(args: argparse.Namespace) -> int:
    from ratelimit_harness.harness.report import write_report

    runs = [existing(run, "a run directory, or a saved race") for run in args.runs]
    written = write_report(runs, Path(args.out) if args.out else None)
    print("\n".join(map(str, written)))
    return 0


def run_study(args: argparse.Namespace) -> int:
    from ratelimit_harness.harness.study.command import run

    return run(args)


def run_doctor(args: argparse.Namespace) -> int:
    import os

    found = diagnose(args.redis_url or os.environ.get("REDIS_URL"))
    print(listing.findings(found))
    return 0 if any(f.usable for f in found if f.redis) else 1


def run_probe(args: argparse.Namespace) -> int:
    if not 0 < args.requests <= 100_000 or not 0 <= args.interval <= 60:
        raise BadArgument("--requests must be 1..100000 and --interval 0..60 seconds")
    builder = resolve(args.limiter)
    spec = args.policy or (CATALOGUE[args.limiter].policy if args.limiter in CATALOGUE else None)
    if spec is None:
        raise PolicyError("--policy is required for a plugged-in limiter")
    policy = Policy.parse(spec)
    with provision(args.redis, args.redis_url) as server:
        limiter = builder(redis.Redis.from_url(server.url), policy)
        print(f"{args.limiter} with {policy} on {server.url} ({server.detail})", file=sys.stderr)
        try:
            results = [
                (number, _probed(limiter, args, number)) for number in range(1, args.requests + 1)
            ]
        finally:
            getattr(limiter, "close", lambda: None)()  # an asyncio plug-in's loop
        print(listing.decisions(results))
    return 0


def _probed(limiter: Any, args: argparse.Namespace, number: int) -> Any:
    """The probe's request ``number``, then the pause after it."""
    try:
        decision = limiter.check(args.identity)
    except redis.RedisError:
        raise
    except Exception as error:  # the limiter's own: said as such, in one line
        raise LimiterError(f"request {number}: {described(error)}") from error
    if args.interval:
        pause(args.interval)
    return decision


def run_check(args: argparse.Namespace) -> int:
    history_path = existing(args.history, "a history, or a run directory")
    if history_path.is_dir():
        return _recheck(history_path)
    if not args.policy:
        raise BadArgument("--policy is required to judge a history file")
    if args.workers is not None and not 1 <= args.workers <= 256:
        raise BadArgument("--workers must be 1..256")
    if not 1 <= args.part_mb <= 1 << 20:
        raise BadArgument("--part-mb must be 1..1048576")
    policy = Policy.parse(args.policy)
    ttls = read_snapshot(existing(args.keys, "--keys")) if args.keys else None
    found = check_file(
        history_path,
        policy,
        ttls,
        workers=args.workers,
        part_bytes=args.part_mb << 20,
        progress=stages(),
        held=_held_whole,
    )
    print(listing.verdict(found))
    if args.json_out:
        with writing(args.json_out), open(args.json_out, "w", encoding="utf-8") as out:
            json.dump(found.to_json(), out, indent=1)
    return 0 if found.valid else 1


def _held_whole(identity: str, why: str) -> None:
    print(
        f"{identity} is larger than a part (--part-mb): judged whole, in memory, because {why}",
        file=sys.stderr,
    )


def _recheck(directory: Path) -> int:
    """``check RUN_DIR``: each history the run judged, judged again; exit 1 if any shows a
    violation, and each said to match the verdict the run recorded, or not. A load run never
    judged (its harness died) is judged now."""
    if never_judged_load(directory):
        from ratelimit_harness.harness.load.commands import judge_run_dir

        return judge_run_dir(directory)
    found = rejudge(directory)
    if not found:
        print(f"{directory}: the run judged no history (a clean race keeps none)")
    for again in found:
        kinds = ", ".join(sorted(again.verdict.kinds)) or "no violation"
        same = "as recorded" if again.same else "DIFFERS from the verdict the run recorded"
        print(f"{again.name}: {again.verdict.policy}: {kinds} ({same})")
    return 1 if any(not again.verdict.valid for again in found) else 0


def load_command(name: str) -> Callable[[argparse.Namespace], int]:
    """A command of the load half, imported when run (it brings Locust's dependencies)."""

    def run(args: argparse.Namespace) -> int:
        from ratelimit_harness.harness.load import commands

        return int(getattr(commands, name)(args))

    return run


def explorer_command(name: str) -> Callable[[argparse.Namespace], int]:
    """A command of the race explorer, imported when run (it brings Hypothesis along)."""

    def run(args: argparse.Namespace) -> int:
        from ratelimit_harness.harness.explorer import commands

        return int(getattr(commands, name)(args))

    return run
