"""The Correctness tab in a real browser: ``ratelimit-harness load --web`` with a limiter that
over-admits, a swarm started from the page, the tab read from the page's DOM.

Needs Chromium (skipped without it, failed without it where HARNESS_REQUIRE_ALL_PATHS=1).
HARNESS_SCREENSHOT=1 also saves the tab to docs/correctness-tab.png and the live charts to
docs/correctness-charts.png, the pictures in docs/load.md.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.devtools import Chromium, DevToolsError
from tests.harness.support import ROOT, child_env, wait_for

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.realtime]

RULE = "api"  # the built-in rules' /api/* endpoint, which --limiter replaces
STARTUP, TAB, VERDICT, STOP = 30.0, 15.0, 30.0, 60.0  # seconds: every wait here ends
SWITCH = 5.0  # seconds for the page to leave the start form once the swarm is started
SCREENSHOT = ROOT / "docs" / "correctness-tab.png"
CHARTS_SCREENSHOT = ROOT / "docs" / "correctness-charts.png"
OVER_ADMISSION = "Over-admission"  # the column's title in harness.load.web.tab.COLUMNS (importing
# that module here would import Locust, whose gevent monkey-patching must not reach pytest)

# The page's side, in JavaScript: fill Locust's start form as a person would (React only sees
# a value set through the input's own setter, followed by an input event), find the tab by its
# title, and read one cell of its table by row (the first column) and column (the header).
FILL = """((values) => Object.entries(values).every(([name, value]) => {
  const input = document.querySelector(`form input[name="${name}"]`);
  if (!input) return false;
  Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value').set.call(input, value);
  input.dispatchEvent(new Event('input', {bubbles: true}));
  return input.value === value;
}))(%s)"""
TAB_NAMED = """[...document.querySelectorAll('[role="tab"]')]
  .find(tab => tab.textContent.trim().toLowerCase() === %s.toLowerCase())"""
RPS = """[...document.querySelectorAll('header p')]
  .find(label => label.textContent.trim() === 'RPS')?.nextElementSibling?.textContent"""
CELL = """(([rule, column]) => {
  for (const table of document.querySelectorAll('table')) {
    const titles = [...table.querySelectorAll('thead th')].map(th => th.textContent.trim());
    const at = titles.indexOf(column);
    if (at < 0) continue;
    for (const row of table.querySelectorAll('tbody tr')) {
      if (row.cells[0] && row.cells[0].textContent.trim() === rule) {
        return row.cells[at] ? row.cells[at].textContent.trim() : null;
      }
    }
  }
  return null;
})(%s)"""


def chromium_or_skip() -> str:
    """Chromium's path; else skip, or fail where HARNESS_REQUIRE_ALL_PATHS=1 (as the Redis
    paths do in tests/conftest.py)."""
    found = shutil.which("chromium") or (
        "/usr/bin/chromium" if os.access("/usr/bin/chromium", os.X_OK) else None
    )
    if found:
        return found
    why = "no chromium on PATH nor at /usr/bin/chromium (Debian: apt-get install chromium)"
    if os.environ.get("HARNESS_REQUIRE_ALL_PATHS") == "1":
        pytest.fail(f"browser tests required but unavailable: {why}")
    pytest.skip(f"browser tests need Chromium: {why}")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as answer:
        return json.load(answer)


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as answer:
            return bool(answer.status == 200)
    except OSError:
        return False


@contextlib.contextmanager
def sigint_not_ignored() -> Iterator[None]:
    """A child inherits an ignored SIGINT (as in a shell script's background job), and Python
    then leaves it ignored: Ctrl-C could not stop the harness. Start it with SIGINT handled."""
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        yield
        return
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextlib.contextmanager
def harness_load(cwd: Path, port: int) -> Iterator[subprocess.Popen[bytes]]:
    """``ratelimit-harness load --web`` in ``cwd`` (its runs/ go there), its output in files
    there; killed with everything it started, whatever happens, if it is still running."""
    command = [
        *(sys.executable, "-m", "ratelimit_harness", "load", "--web", "--web-port", str(port)),
        *("--limiter", "in-memory", "--instances", "4", "--users", "20", "--spawn-rate", "20"),
        *("--redis", "embedded"),  # the limiter under test keeps no state in Redis anyway
    ]
    with (
        (cwd / "harness.out").open("wb") as out,
        (cwd / "harness.err").open("wb") as err,
        sigint_not_ignored(),
    ):
        process = subprocess.Popen(
            command,
            cwd=cwd,
            env=child_env(),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,  # its own process group, to kill all of it if it hangs
        )
    try:
        yield process
    finally:
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


def tail(path: Path, lines: int = 8) -> str:
    return " | ".join(path.read_text(errors="replace").strip().splitlines()[-lines:])


def charts_show_the_over_admission(browser: Chromium, url: str, tmp_path: Path) -> None:
    """The live charts, the page the Download Data tab links to: the rule's chart, its spans
    over the policy's allowance in red, drawn again as rounds come."""
    browser.open(url + "correctness/charts")
    chart = f"document.querySelector('svg[data-rule=\"{RULE}\"]')"
    over = browser.wait_for(
        f"{chart}?.querySelectorAll('rect.bar.over').length", VERDICT, what="a red bar"
    )
    assert int(over) > 0
    assert browser.evaluate(f"{chart}.querySelectorAll('line.allowance').length") == 1
    status = "document.getElementById('status').textContent"
    judged = browser.evaluate(status)
    browser.wait_for(f"{status} !== {json.dumps(judged)}", TAB, what="a redrawn chart")
    browser.screenshot(tmp_path / "correctness-charts.png")
    if os.environ.get("HARNESS_SCREENSHOT") == "1":
        browser.screenshot(CHARTS_SCREENSHOT)


def test_correctness_tab_shows_over_admission(tmp_path: Path) -> None:
    binary = chromium_or_skip()
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    with harness_load(tmp_path, port) as harness:
        wait_for(lambda: harness.poll() is not None or answers(url), STARTUP)
        assert harness.poll() is None, f"the harness exited: {tail(tmp_path / 'harness.err')}"
        assert answers(url), f"no web UI at {url} in {STARTUP:.0f} s"

        with Chromium(binary) as browser:
            browser.open(url)
            browser.wait_for(
                "document.querySelector('form button[type=\"submit\"]') !== null",
                TAB,
                what="Locust's start form",
            )
            values = json.dumps({"userCount": "20", "spawnRate": "20"})
            assert browser.evaluate(FILL % values), "cannot fill the start form"
            browser.click('form button[type="submit"]')

            tab = TAB_NAMED % json.dumps("Correctness")
            try:
                browser.wait_for(f"!!({tab})", SWITCH, what="the Correctness tab")
            except DevToolsError:
                # Locust runs, but now and then (1 start in 4 to 8 here) its page stays on the
                # start form; loaded again, it shows the running swarm, as a person would see
                browser.open(url)
                browser.wait_for(f"!!({tab})", TAB, what="the Correctness tab")
            browser.evaluate(f"({tab}).click()")
            browser.wait_for(
                f"({tab}).getAttribute('aria-selected') === 'true'", TAB, what="the tab shown"
            )

            cell = CELL % json.dumps([RULE, OVER_ADMISSION])
            shown = browser.wait_for(
                f"(() => {{ const text = {cell}; return Number(text) > 0 ? text : null; }})()",
                VERDICT,
                what=f"{OVER_ADMISSION} > 0 for {RULE} in the tab",
            )
            assert int(shown) > 0
            # The tab follows the run: its next poll (every 2 s) brings more decisions; and
            # Locust's own figures, in the same answers, still arrive (its RPS counts from the
            # third second on, so the screenshot waits for it too).
            decided = CELL % json.dumps([RULE, "Decisions"])
            first = int(browser.evaluate(decided))
            browser.wait_for(f"Number({decided}) > {first}", TAB, what="the tab to update")
            browser.wait_for(f"Number({RPS}) > 0", TAB, what="Locust's RPS > 0 in the header")
            browser.screenshot(tmp_path / "correctness-tab.png")
            if os.environ.get("HARNESS_SCREENSHOT") == "1":
                browser.screenshot(SCREENSHOT)

            charts_show_the_over_admission(browser, url, tmp_path)

        rows = {row["rule"]: row for row in get_json(url + "correctness")["rules"]}
        assert rows[RULE]["over-admission"] > 0, rows[RULE]

        began = time.monotonic()
        # The harness alone, not its group as a terminal's Ctrl-C would: the embedded Redis,
        # in that group, would shut down on SIGINT before the harness reads its keys.
        harness.send_signal(signal.SIGINT)
        try:
            code = harness.wait(timeout=STOP)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the harness did not stop {STOP:.0f} s after SIGINT")
    summary = (tmp_path / "harness.out").read_text()
    assert code == 1, f"exit {code} after {time.monotonic() - began:.1f} s: " + tail(
        tmp_path / "harness.err"
    )
    assert f"{RULE} over-admission" in summary, summary  # the witness of the violation
    assert any(line.startswith(f"{RULE} ") for line in summary.splitlines()), summary
    assert "violations found" in summary
