"""The ``study`` command: provision a Redis, measure, write the run directory (the
measurements, the histories judged) and its report."""

from __future__ import annotations

import argparse
import sys

from ratelimit_harness.harness.errors import BadArgument
from ratelimit_harness.harness.provision import provision
from ratelimit_harness.harness.report import write_report
from ratelimit_harness.harness.rundir import new_run_dir
from ratelimit_harness.harness.study.judged import Histories
from ratelimit_harness.harness.study.run import FULL, QUICK, study, write


def run(args: argparse.Namespace) -> int:
    if not 0 <= args.seed < 2**32:
        raise BadArgument("--seed must be 0..4294967295")
    sizes = QUICK if args.quick else FULL
    kept = Histories()
    with provision(args.redis, args.redis_url) as server:
        print(f"measuring on {server.url} ({server.detail})", file=sys.stderr)
        measured = study(server, sizes, args.seed, kept)
    run_dir = new_run_dir("study").resolve()
    write(run_dir, measured, kept)
    written = write_report([run_dir])
    print((run_dir / "summary.md").read_text())
    print(f"report: {written[-1]}")
    return 0
