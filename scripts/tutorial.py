"""docs/tutorial.md, written by running it: each step's command runs in a fresh project folder,
and the page shows what it printed. So the tutorial cannot drift from the code.

    python scripts/tutorial.py            # run every step, write docs/tutorial.md (about 2 min)
    python scripts/tutorial.py --out F    # write F instead

``make docs`` runs it. It starts Redis servers of its own (embedded), on loopback only.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "tutorial.md"
TIMEOUT = 600  # seconds, for any one step
MOST_LINES = 44  # of a step's output shown; the rest is cut, and the page says so
TAIL = 8  # of those, the last lines of the output

BROKEN = '''\
"""A fixed window from each identity's first request: INCR, then EXPIRE."""


def factory(client, policy):
    window = int(policy.window)

    def check(identity: str) -> bool:
        key = f"rl:{identity}"
        count = client.incr(key)
        if count == 1:  # the first request of a window starts its clock
            client.expire(key, window)
        return count <= policy.limit

    return check
'''

FIXED = '''\
"""A fixed window from each identity's first request: INCR and EXPIRE in one Lua script."""

SCRIPT = """
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
return count
"""


def factory(client, policy):
    script = client.register_script(SCRIPT)

    def check(identity: str) -> bool:
        return script(keys=[f"rl:{identity}"], args=[int(policy.window)]) <= policy.limit

    return check
'''

TEST = """\
def test_my_limiter(race):
    result = race("mylimiter:factory", "fixed-window:limit=2,window=10,anchor=first")
    assert result.clean, result
"""

POLICY = "fixed-window:limit=2,window=10,anchor=first"
RACE = f"ratelimit-harness race --limiter mylimiter:factory --policy {POLICY} --seed 1"
LOAD = (
    "ratelimit-harness load --limiter mylimiter:factory "
    "--policy fixed-window:limit=5,window=1,anchor=first --instances 2 --users 20 "
    "--duration 10 --nemesis kill-instance --nemesis-every 4 --nemesis-for 1"
)


@dataclass
class Project:
    """The reader's project folder, where every step runs."""

    folder: Path

    def write(self, name: str, text: str) -> str:
        (self.folder / name).write_text(text, encoding="utf-8")
        return text

    def run(self, command: str) -> str:
        """``command`` run in the folder, as a shell would; what it printed, cut to size."""
        env = {**os.environ, "PYTHONPATH": str(self.folder), "HARNESS_REDIS": "embedded"}
        bin_dir = str(Path(sys.executable).parent)
        env["PATH"] = os.pathsep.join([bin_dir, env.get("PATH", "")])
        done = subprocess.run(
            command, shell=True, cwd=self.folder, env=env, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, timeout=TIMEOUT, check=False,
        )  # fmt: skip
        print(f"$ {command}  (exit {done.returncode})", file=sys.stderr)
        lines = done.stdout.strip("\n").splitlines()
        if len(lines) > MOST_LINES:  # the head and the tail, where a command says what it found
            cut = len(lines) - MOST_LINES
            lines = [*lines[: MOST_LINES - TAIL], f"... ({cut} lines left out)", *lines[-TAIL:]]
        return "\n".join(lines) + f"\n(exit code {done.returncode})"

    def shown(self, command: str) -> str:
        """``command`` run, as the page shows it: the command line, then what it printed."""
        return f"```console\n$ {command}\n{self.run(command)}\n```"

    def newest_run(self, kind: str) -> str:
        """The run directory of ``kind`` made last, as a path from the folder."""
        runs = sorted((self.folder / "runs").glob(f"{kind}-*"), key=lambda p: p.stat().st_mtime)
        if not runs:
            raise SystemExit(f"no {kind} run directory in {self.folder / 'runs'}")
        return str(runs[-1].relative_to(self.folder))


def code(name: str, text: str, language: str = "python") -> str:
    return f"```{language}\n# {name}\n{text}```"


def page(project: Project) -> str:
    """Every step, run in ``project``; the page's Markdown."""
    parts = [
        "# Tutorial: a race caught, replayed, fixed and proved clean",
        "Back to the [README](../README.md). This page is written by running it "
        "(`python scripts/tutorial.py`, part of `make docs`): every output below is real.",
        "You will write a small rate limiter with a classic flaw. The harness will find the "
        "flaw, show the shortest order of events that breaks it, and replay that order. Then "
        "you will fix the limiter and let the harness prove it clean, to a stated bound. Last, "
        "you will put it under load while a fault strikes. Words in *italics* are defined in "
        "[concepts](concepts.md).",
        "## 1. Install",
        "The harness is one Python package. Install it where your limiter's tests run:",
        "```sh\npip install ratelimit-harness      # or, from a clone: pip install .\n```",
        "It needs a Redis to race on. `doctor` says which ways of getting one work here. The "
        "tutorial uses the embedded one: a Redis (or Valkey) server process the harness "
        "starts itself.",
        project.shown("ratelimit-harness doctor"),
        "## 2. A limiter with a flaw",
        "A limiter, for the harness, is a *factory*: `factory(client, policy)` gets a redis-py "
        "client and the parsed *policy*, and returns `check(identity)`, which says whether "
        "one more request of that identity may pass. This one counts each identity's "
        "requests with INCR, and starts the window's clock with EXPIRE on the first:",
        code("mylimiter.py", project.write("mylimiter.py", BROKEN)),
        f"Its policy: at most 2 requests per 10 s window, counted from each identity's first "
        f"request (`{POLICY}`).",
        "## 3. Race it",
        "`race` runs two copies of the limiter (two *instances*) against one Redis. It tries "
        "the orders in which their commands can reach Redis, one *schedule* at a time, with "
        "crashes, stalls and clock skew between them. Then it judges every schedule's "
        "history against the policy. `--seed 1` makes the run repeatable.",
    ]
    parts.append(project.shown(RACE))
    caught = project.newest_run("race")
    parts += [
        "It found two flaws, each with the shortest *trace* that shows it. The first is an "
        "*immortal key*: a key that never expires. An instance sent INCR, then crashed "
        "before its EXPIRE. The key stays in Redis with no TTL, so its count never resets.",
        "The second is what that does to a user: a *wrongful rejection*. The same crash "
        "leaves the count behind, time passes, and a request the policy allows in a new "
        "window is refused. Each flaw says what it *needs*: here a crash (and, for the "
        "second, time passing). Without a crash this limiter holds. The exit code is 1: a "
        "flaw was found.",
        "## 4. Replay it",
        "The shortest schedule was saved in the race's run directory. `replay` runs it again, "
        "on a fresh Redis, and checks that it breaks the limiter again:",
    ]
    parts.append(project.shown(f"ratelimit-harness replay {caught}/trace.json"))
    parts += [
        "## 5. Fix it",
        "INCR and EXPIRE must happen together, or not at all. A Lua script runs on the Redis "
        "server as one step, so no crash can fall between them:",
        code("mylimiter.py", project.write("mylimiter.py", FIXED)),
        "Race it again:",
    ]
    parts.append(project.shown(RACE))
    clean = project.newest_run("race")
    parts += [
        "No violation. A clean verdict says what was explored. First comes the *bounded "
        "stage*: every schedule up to a stated size (instances, requests, switches between "
        "instances, faults, time moves), smallest first. Then Hypothesis draws random "
        "schedules beyond that bound. The exit code is 0.",
        "## 6. Read the report",
        "Every race keeps its record in its run directory. `report` renders it as HTML, "
        "Markdown and JUnit XML, for a person or a CI job:",
    ]
    parts.append(project.shown(f"ratelimit-harness report {clean}"))
    parts.append(project.shown(f"cat {clean}/summary.md"))
    parts += [
        "## 7. Keep it in your test suite",
        "Installing the harness installs a pytest plugin. Its `race` fixture races a limiter "
        "as the command does, and the test fails with the trace if a flaw shows up:",
        code("test_mylimiter.py", project.write("test_mylimiter.py", TEST)),
    ]
    parts.append(project.shown("pytest -q test_mylimiter.py"))
    parts += [
        "## 8. Put it under load, with a fault",
        "`load` starts a Redis, app instances that use your limiter, and a Locust swarm that "
        "sends them traffic. A *nemesis* does faults while the swarm runs: here it kills an "
        "app instance mid-request, then starts it again. The run ends with a verdict on "
        "everything the clients saw, and with what each fault did:",
    ]
    parts.append(project.shown(LOAD))
    parts += [
        "Requests sent to the killed instance got no decision (*undecided*), and those it had "
        "taken were lost with it. The fixed limiter stays correct through the fault.",
        "## Where next",
        "- [explorer](explorer.md): every option of `race` and `race-test`, time and faults, "
        "a limiter in any language.",
        "- [load](load.md): traffic patterns, rules per endpoint, the web UI, every fault.",
        "- [verdicts](verdicts.md): what each policy promises, and how a history is judged.",
    ]
    text = "\n\n".join(parts) + "\n"
    return text.replace(str(project.folder), "~/myproject")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=PAGE)
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="tutorial-"))
    try:
        text = page(Project(folder))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    args.out.write_text(re.sub(r"[ \t]+\n", "\n", text), encoding="utf-8")
    print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
