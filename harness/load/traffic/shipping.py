"""A Locust worker's records, shipped to its master over Locust's own messages.

A worker on a machine of its own has no run directory: the master's path means nothing there.
So it writes its client journals and its promises of ``X-RateLimit-Remaining`` where it can: a
*spool*, a folder of its own under ``TMPDIR``, laid out as a run directory is. With each stats
report (every 3 s, and a last one when the master tells it to quit) it sends the whole lines each
file gained since the last report. The master appends them to the run directory's files, each
named after the worker that sent it, so that the run is judged as if every worker had written
there: every request a worker sent and reported is judged.

A record is sent once its line is whole, and only once: a kill of the worker loses what it had
not yet reported, as a kill of the machine would lose a journal's unwritten end.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Collection, Mapping
from pathlib import Path

from ratelimit_harness.harness.load.contract.journals import JournalTail

REPORT = "ratelimit_harness_records"  # the key of a stats report that carries them
SPOOLED = {  # what is shipped: the run directory's folders of records, one folder per rule
    "journals": Path("journals", "client"),
    "promises": Path("promises"),
}
NAME = re.compile(r"[A-Za-z0-9_.-]+")  # a file or a sender name, kept as it is
Records = dict[str, dict[str, dict[str, str]]]  # what -> rule -> file name -> lines


class Spool:
    """A worker's records, in a folder of its own, and what they gained since last taken."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="ratelimit-harness-worker-"))
        self._tails: dict[Path, JournalTail] = {}

    def take(self) -> Records:
        """The whole lines each file gained since the last take, as text."""
        taken: Records = {}
        for what, folder in SPOOLED.items():
            for path in sorted((self.root / folder).glob("*/*.jsonl")):
                lines = self._tails.setdefault(path, JournalTail(path)).lines()
                if lines:
                    text = b"\n".join(lines).decode() + "\n"
                    taken.setdefault(what, {}).setdefault(path.parent.name, {})[path.name] = text
        return taken

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def receive(
    run_dir: Path, sender: str, records: Mapping[str, object], rules: Collection[str]
) -> int:
    """Append what ``sender`` shipped to ``run_dir``'s files (each named ``SENDER-FILE``): only
    the rules of the run, and file names of letters, digits, ``_``, ``.`` and ``-`` (a report
    never writes outside the run directory). The lines appended."""
    prefix = "".join(c if NAME.fullmatch(c) else "_" for c in sender)
    appended = 0
    for what, by_rule in records.items():
        folder = SPOOLED.get(what)
        if folder is None or not isinstance(by_rule, dict):
            continue
        for rule, files in by_rule.items():
            if rule not in rules or not isinstance(files, dict):
                continue
            for name, text in files.items():
                if not NAME.fullmatch(name) or not name.endswith(".jsonl") or not text:
                    continue
                target = run_dir / folder / rule / f"{prefix}-{name}"
                target.parent.mkdir(parents=True, exist_ok=True)
                with target.open("a", encoding="utf-8") as out:
                    out.write(text)
                appended += text.count("\n")
    return appended
