"""What each command's ``--help`` says beside its options: one line on what it does, an example,
and its exit codes. The CLI (``cli.py``) reads it; a test holds every command to it.

Exit codes are the same kind everywhere. 0: done, nothing found. 1: the command found what it
looks for (a violation, a verdict that differs). 2: the input is wrong (an argument, a file, a
policy, a limiter that gives no decision). 3: the environment failed (no Redis could be started,
Redis stopped answering, Docker refused). 130: interrupted. A CI job can so tell "fix your
input" (2) from "fix the machine" (3).
"""

from __future__ import annotations

from dataclasses import dataclass

CLEAN, FOUND, BAD_INPUT, ENVIRONMENT, INTERRUPTED = 0, 1, 2, 3, 130

COMMON_CODES = (
    (BAD_INPUT, "bad input: an argument, a file, a policy, a limiter that gives no decision"),
    (ENVIRONMENT, "the environment failed: no Redis could be started, Redis stopped answering"),
    (INTERRUPTED, "interrupted (Ctrl-C)"),
)
TOP_CODES = (
    (CLEAN, "done, and nothing found"),
    (FOUND, "found what the command looks for: a violation, a verdict that differs"),
    *COMMON_CODES,
)


@dataclass(frozen=True)
class Usage:
    summary: str  # one line: what the command does
    example: str  # a command line, as a user types it
    clean: str  # what exit code 0 means
    found: str = ""  # what exit code 1 means ("" where the command never exits 1)

    def epilog(self, prog: str) -> str:
        codes = [(CLEAN, self.clean), *([(FOUND, self.found)] if self.found else [])]
        return (
            f"example:\n  {prog} {self.example}\n\n{exit_codes((*codes, *COMMON_CODES))}\n\n"
            f"{GLOSSARY}"
        )


GLOSSARY = "the words it prints: docs/concepts.md (in the source, or on the project's page)"


def exit_codes(codes: tuple[tuple[int, str], ...]) -> str:
    return "exit codes:\n" + "\n".join(f"  {code:<3} {meaning}" for code, meaning in codes)


COMMANDS = {
    "doctor": Usage(
        "Say which ways of getting a Redis work on this machine.",
        "doctor",
        "at least one way works",
        "no way works (each one says why)",
    ),
    "limiters": Usage(
        "List the catalogue's limiters, their policies and the flaws each must be caught with.",
        "limiters",
        "always",
    ),
    "probe": Usage(
        "Send requests through one limiter, one at a time, and show each decision.",
        "probe --limiter token-bucket-lua --requests 8",
        "the requests were sent",
    ),
    "check": Usage(
        "Judge a recorded history against a policy, or judge a run directory again.",
        "check history.jsonl --policy fixed-window:limit=5,window=2",
        "no violation",
        "a violation (each with a witness)",
    ),
    "race": Usage(
        "Search schedules of several instances for a race; shrink and save the first found.",
        "race --limiter mymod:factory --policy fixed-window:limit=5,window=10",
        "no violation in the schedules explored",
        "a violation, its shrunk trace saved",
    ),
    "replay": Usage(
        "Run a saved trace again on a fresh Redis.",
        "replay runs/race-20261202-120000/trace.json",
        "the trace's violation did not happen again",
        "the trace's violation happened again",
    ),
    "race-test": Usage(
        "Race every limiter of the catalogue and hold each verdict to the catalogue's.",
        "race-test --seed 1",
        "every verdict matches the catalogue",
        "a verdict differs from the catalogue",
    ),
    "load": Usage(
        "Drive a Locust swarm against app instances on one Redis, and judge what they decided.",
        "load --limiter in-memory --duration 10",
        "no violation",
        "a violation",
    ),
    "serve": Usage(
        "Start the app instances until Ctrl-C, for traffic of your own; then judge them.",
        "serve --limiter token-bucket-lua --instances 2",
        "no violation",
        "a violation",
    ),
    "study": Usage(
        "Measure the chapter's comparison table (Part 10) on a real Redis.",
        "study --quick",
        "every algorithm measured",
    ),
    "report": Usage(
        "Write summary.md, junit.xml, plots and report.html from a run's directory.",
        "report runs/load-20261202-120000",
        "the report was written",
    ),
}
