"""docs/tutorial.md, written by running it: each step of ``scripts/tutorial.source.md`` runs in
a fresh project folder, and the page shows what it printed. So the tutorial cannot drift from
the code.

    python scripts/tutorial.py            # run every step, write docs/tutorial.md (about 2 min)
    python scripts/tutorial.py --out F    # write F instead

The source is the page's Markdown, with two kinds of block that are done, not shown as they are:

- a ``run`` block holds one command: the page shows it run, with what it printed and its exit
  code (``{race}`` in it: the race run directory made last);
- a block whose info string names a file (``python file=mylimiter.py``) is written into the
  project folder, and shown with its name.

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
SOURCE = ROOT / "scripts" / "tutorial.source.md"
PAGE = ROOT / "docs" / "tutorial.md"
TIMEOUT = 600  # seconds, for any one step
MOST_LINES = 44  # of a step's output shown; the rest is cut, and the page says so
TAIL = 8  # of those, the last lines of the output
# a block that is done: ```run, or ```LANGUAGE file=NAME; its body; its closing fence
BLOCK = re.compile(r"^```(run|(\w+) file=(\S+))\n(.*?)^```\n", re.MULTILINE | re.DOTALL)


@dataclass
class Project:
    """The reader's project folder, where every step runs."""

    folder: Path

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

    def newest_run(self, kind: str) -> str:
        """The run directory of ``kind`` made last, as a path from the folder."""
        runs = sorted((self.folder / "runs").glob(f"{kind}-*"), key=lambda p: p.stat().st_mtime)
        if not runs:
            raise SystemExit(f"no {kind} run directory in {self.folder / 'runs'}")
        return str(runs[-1].relative_to(self.folder))

    def done(self, block: re.Match[str]) -> str:
        """One block of the source, done: a command run, or a file written; as the page shows
        it."""
        _, language, name, body = block.groups()
        if language is None:  # a run block
            command = body.strip()
            if "{race}" in command:
                command = command.replace("{race}", self.newest_run("race"))
            return f"```console\n$ {command}\n{self.run(command)}\n```\n"
        (self.folder / name).write_text(body, encoding="utf-8")
        return f"```{language}\n# {name}\n{body}```\n"


def files(source: str) -> dict[str, list[str]]:
    """The files the source writes, by name: each version, in order."""
    found: dict[str, list[str]] = {}
    for _, _, name, body in BLOCK.findall(source):
        if name:
            found.setdefault(name, []).append(body)
    return found


def page(source: str, project: Project) -> str:
    """The page: every block of ``source`` done in ``project``, in order."""
    text = BLOCK.sub(project.done, source)
    return re.sub(r"[ \t]+\n", "\n", text.replace(str(project.folder), "~/myproject"))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=PAGE)
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="tutorial-"))
    try:
        text = page(SOURCE.read_text(encoding="utf-8"), Project(folder))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    args.out.write_text(text, encoding="utf-8")
    print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
