"""How a load run's own judge scales: a run directory of 1 M and 10 M requests (each journalled by
an instance and by a Locust process, each admitted one with its promise of
``X-RateLimit-Remaining``) judged by ``harness.load.judge.final``, beside the same journals merged
and judged in memory (``merge_journals``, then ``check``, for both sides: what the judge did before
it merged to files and judged in parts), each in a process of its own: requests per second and
peak memory.

The requests are ``check_speed.build``'s (a reference model's decisions on 200 identities, 2,000
a second), one million written again for each further million with the identities renamed (in
journals of their own, as more processes would write), so the busiest identity keeps 5,000.
With ``--identities 1``, each million is one identity's: busy, larger than a part, it is judged
as a stream.
Peak memory is the largest resident set of the judging process (``self``) and of any one worker
(``worker``). Asserts only that both ways find the same violations.

    .venv/bin/python bench/judge_scale.py [--requests 1000000,10000000] [--identities 200]
        [--json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
from pathlib import Path

from check_speed import build  # siblings: their folder is first on the path
from own_process import header, measured, scale_row

from ratelimit_harness.harness.history import Operation
from ratelimit_harness.harness.history.journal import complete_line, invoke_line
from ratelimit_harness.harness.load.contract.rules import DEFAULT_OUTBOUND, Rule, validated
from ratelimit_harness.limiters import Policy

POLICY = "fixed-window:limit=5,window=1"
MILLION = 1_000_000
RULES = validated([Rule("api", "/api/*", "fixed-window-lua", POLICY)], DEFAULT_OUTBOUND)

# run in a fresh process (own_process), so that one measure's memory is not the next one's
JUDGE = """
import sys, time
from pathlib import Path
from ratelimit_harness.harness.checkers import check
from ratelimit_harness.harness.history import merge_journals
from ratelimit_harness.harness.load.contract.journals import journal_paths
from ratelimit_harness.harness.load.judge.final import judge
from ratelimit_harness.harness.load.contract.rules import rules_from_json
run_dir, how = Path(sys.argv[1]), sys.argv[2]
rules = rules_from_json((run_dir / "rules.json").read_text())
started = time.perf_counter()
if how == "judge":
    verdict = judge(run_dir, rules, {}, None).rules[0].server
else:
    policy = rules.all[0].judge_policy
    verdict, _ = [check(merge_journals(journal_paths(run_dir, side, "api")), policy)
                  for side in ("server", "client")]
result = {"seconds": time.perf_counter() - started, "operations": verdict.operations,
          "verdict": {v.kind: v.count for v in verdict.violations}}
"""


def journals(ops: list[Operation], folder: Path) -> dict[str, bytes]:
    """Each journal's bytes (by its path under ``folder``), and the promises', for ``ops``: two
    instances and two Locust processes."""
    written: dict[str, list[bytes]] = {}
    numbers: dict[str, int] = {}
    for index, op in enumerate(ops):
        assert op.complete is not None
        outcome = f'"{op.outcome.value}"'
        for side, process, early in (("server", "app", 0.0), ("client", "locust", 0.0005)):
            name = f"journals/{side}/api/{process}-{index % 2}-COPY.jsonl"
            number = numbers[name] = numbers.get(name, -1) + 1
            key = f'"{op.key}"'
            written.setdefault(name, []).append(
                invoke_line(number, f'"{process}-{index % 2}"', key, op.invoke - early)
                + complete_line(number, op.complete + early, outcome, None)
            )
        if op.outcome.value == "allowed":
            promise = {"key": op.key, "invoke": op.invoke, "complete": op.complete}
            line = json.dumps(promise | {"remaining": 0}).encode() + b"\n"
            written.setdefault(f"promises/api/locust-{index % 2}-COPY.jsonl", []).append(line)
    return {name: b"".join(lines) for name, lines in written.items()}


def write_run(base: dict[str, bytes], copies: int, run_dir: Path) -> None:
    """``copies`` times the journals ``base``, each copy's identities renamed, in files of its
    own."""
    run_dir.mkdir()
    (run_dir / "rules.json").write_text(RULES.to_json())
    for copy in range(copies):
        for name, content in base.items():
            path = run_dir / name.replace("COPY", str(copy))
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content.replace(b'"key": "user:', b'"key": "user:%d-' % copy))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", default="1000000,10000000")
    parser.add_argument("--memory-up-to", type=int, default=10 * MILLION)
    parser.add_argument("--identities", type=int, default=200, help="in each million")
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    args = parser.parse_args()
    sizes = [int(n) for n in args.requests.split(",")]
    rows: list[dict[str, object]] = []
    print(header("requests", "req/s"))
    with tempfile.TemporaryDirectory(prefix="judge-scale-") as folder:
        unit = min(MILLION, *sizes)
        base = journals(build(Policy.parse(POLICY), unit, args.identities, 1), Path(folder))
        for size in sizes:
            run_dir = Path(folder, f"run-{size}")
            write_run(base, max(1, size // unit), run_dir)
            verdicts = []
            hows = ("memory", "judge") if size <= args.memory_up_to else ("judge",)
            for how in hows:
                found = measured(JUDGE, str(run_dir), how)
                verdicts.append(found["verdict"])
                measure = f"load judge ({how}): requests/s"
                rows.append(scale_row(measure, "requests, both sides", how, found))
            if len(verdicts) == 2 and verdicts[0] != verdicts[1]:
                raise SystemExit(f"judged in memory and by the judge differ: {verdicts}")
            subprocess.run(["rm", "-rf", str(run_dir)], check=True)
    if args.json:
        print(json.dumps({"bench": "judge_scale", "rows": rows}))


if __name__ == "__main__":
    main()
