"""The ``load`` and ``serve`` commands: check the arguments, run, print, choose the exit code."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from urllib.parse import urlsplit

from ratelimit_harness.harness.history.loads import LoadRecord
from ratelimit_harness.harness.load.contract.rules import Rules, load_rules
from ratelimit_harness.harness.load.faults.nemesis import (
    Schedule,
    check_victims,
    needs,
    parse_nemesis,
)
from ratelimit_harness.harness.load.judge.final import judge_afterwards
from ratelimit_harness.harness.load.run import (
    Faults,
    LoadError,
    Swarm,
    System,
    locustfile_path,
    require_loopback,
    run_load,
    serve_until_stopped,
)
from ratelimit_harness.harness.load.system.redis_of_run import redis_for
from ratelimit_harness.harness.load.system.service import Service
from ratelimit_harness.harness.provision import RedisServer
from ratelimit_harness.harness.report import shown_in_terminal, write_report

MAX_INSTANCES, MAX_USERS, MAX_DURATION = 32, 10_000, 24 * 3600


def load(args: argparse.Namespace) -> int:
    service = _service(args)
    rules = _rules(args, service)
    if not 1 <= args.users <= MAX_USERS or not 0 < args.spawn_rate <= MAX_USERS:
        raise LoadError(f"--users must be 1..{MAX_USERS} and --spawn-rate 0..{MAX_USERS}")
    if args.duration is not None and not 0 < args.duration <= MAX_DURATION:
        raise LoadError(f"--duration must be 0..{MAX_DURATION} seconds")
    if args.duration is not None and not float(args.duration).is_integer():
        raise LoadError(f"--duration is whole seconds (Locust's run time), not {args.duration:g}")
    if not 1 <= args.processes <= 64 or not 1 <= args.web_port <= 65535:
        raise LoadError("--processes must be 1..64 and --web-port 1..65535")
    if args.constant_rate < 0:
        raise LoadError("--constant-rate must be at least 0 (0: off)")
    web = args.web or args.duration is None
    swarm = Swarm(
        locustfile_path(args.locustfile),
        args.users,
        args.spawn_rate,
        None if web else args.duration,
        args.processes,
        args.web_port,
        args.constant_rate,
    )
    if web:
        print(
            f"Locust web UI: http://127.0.0.1:{args.web_port} (the Correctness tab; JSON at "
            "/correctness); Ctrl-C to stop and judge",
            file=sys.stderr,
        )
    faults = Faults(parse_nemesis(args.nemesis), Schedule(args.nemesis_every, args.nemesis_for))
    ours = not (args.redis_url or os.environ.get("REDIS_URL"))
    starts = service is None or service.command is not None
    check_victims(faults.faults, ours=ours, cluster=args.cluster, instances=starts)
    replicas = needs(faults.faults, "cluster")
    with redis_for(args.redis, args.redis_url, args.cluster, service, replicas=replicas) as server:
        run_dir, verdict = run_load(_system(rules, server, args, service), swarm, faults)
    written = write_report([run_dir])
    print(shown_in_terminal(run_dir))
    print(f"run directory: {run_dir}")
    print(f"report: {written[-1]}")
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as out:
            json.dump(verdict.to_json(), out, indent=1)
    return exit_code(verdict)


def serve(args: argparse.Namespace) -> int:
    rules = _rules(args)
    with redis_for(args.redis, args.redis_url, args.cluster) as server:
        run_dir, verdict = serve_until_stopped(_system(rules, server, args))
    print(shown_in_terminal(run_dir))
    print(f"run directory: {run_dir}")
    return exit_code(verdict)


def judge_run_dir(run_dir: Path) -> int:
    """``check RUN_DIR`` of a load run that was never judged (its harness died): judge it now,
    write its report, print it as ``load`` would have."""
    verdict = judge_afterwards(run_dir)
    written = write_report([run_dir])
    print(shown_in_terminal(run_dir))
    print(f"judged afterwards, from {run_dir}; report: {written[-1]}")
    return exit_code(verdict)


def exit_code(verdict: LoadRecord) -> int:
    """1 for a violation or a header lie; 2 when a limiter decided nothing at all (it failed
    every request), saying how it failed; else 0."""
    for rule in verdict.rules:
        if rule.undecided:
            print(
                f"error: rule {rule.name!r}: {rule.limiter} decided nothing, "
                f"it failed every request: {rule.first_error}",
                file=sys.stderr,
            )
            return 2
    return 0 if verdict.valid else 1


def _system(
    rules: Rules, server: RedisServer, args: argparse.Namespace, service: Service | None = None
) -> System:
    return System(rules, server, args.instances, args.cluster, args.host, service)


def _service(args: argparse.Namespace) -> Service | None:
    """The service of the user's own that ``--service`` or ``--target`` names, if one does."""
    if args.misplaced_exec is not None:
        raise LoadError(
            "load starts an HTTP service of yours with --service COMMAND (--exec is race's: a "
            "limiter on the line protocol)"
        )
    if args.service is not None:
        if not args.service.strip():
            raise LoadError("--service needs a command")
        return Service(command=args.service)
    if args.target is None:
        return None
    targets = tuple(url.strip().rstrip("/") for url in args.target.split(",") if url.strip())
    if not targets:
        raise LoadError("--target needs at least one URL")
    for url in targets:
        if urlsplit(url).scheme not in ("http", "https") or not urlsplit(url).hostname:
            raise LoadError(f"--target {url!r} is not an http:// or https:// URL")
        require_loopback(url, args.allow_remote)
    return Service(targets=targets)


def _rules(args: argparse.Namespace, service: Service | None = None) -> Rules:
    if not 1 <= args.instances <= MAX_INSTANCES:
        raise LoadError(f"--instances must be 1..{MAX_INSTANCES}")
    if args.redis_url:
        require_loopback(args.redis_url, args.allow_remote)
    require_loopback(f"http://{args.host}", args.allow_remote)
    if service is not None and args.limiter:
        raise LoadError(
            "--limiter is the harness's app's: with --service or --target, yours decides"
        )
    rules = load_rules(args.config, served=service is not None)
    return rules.with_default(args.limiter, args.policy, args.judge_by, args.cost, args.refund)
