"""A tiny Chrome DevTools Protocol client: headless Chromium, one page, JavaScript, screenshots.

Only what the browser tests need, over ``websocket-client`` (installed with Locust), so no
Selenium or Playwright and no browser download: the system's ``chromium`` is started with
``--remote-debugging-port=0``, its port read from ``DevToolsActivePort`` in a fresh profile
directory, and one page is driven through a flattened session of the browser's endpoint.
``close`` (or leaving the ``with`` block) always kills the browser and removes its profile.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Self, TypeVar

import websocket

FLAGS = (
    "--headless",
    "--no-sandbox",  # we run as root in a container
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",  # else it calls Google, which fails offline
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
    "--remote-debugging-port=0",
)
TIMEOUT = 15.0  # seconds for one command, and for the browser to start
T = TypeVar("T")


class DevToolsError(RuntimeError):
    """The browser did not start, a command failed, or a page's script threw."""


class Chromium:
    """One headless Chromium with one page; a context manager that always cleans up."""

    def __init__(self, binary: str = "chromium", *, width: int = 1600, height: int = 900) -> None:
        self.profile = Path(tempfile.mkdtemp(prefix="harness-chromium-"))
        self._log: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 (closed in close)
        self._ids = itertools.count(1)
        self._socket: websocket.WebSocket | None = None
        self._session = ""
        self._process = subprocess.Popen(
            [
                binary,
                *FLAGS,
                f"--user-data-dir={self.profile}",
                f"--window-size={width},{height}",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own group: its helpers are killed with it
        )
        try:
            self._connect(width, height)
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def _connect(self, width: int, height: int) -> None:
        active = self.profile / "DevToolsActivePort"

        def port_file() -> list[str]:
            if self._process.poll() is not None:
                raise DevToolsError(
                    f"chromium exited with {self._process.returncode}: {self.log_tail()}"
                )
            return _lines(active)

        lines = _poll(port_file, TIMEOUT)
        if not lines:
            raise DevToolsError(f"chromium opened no DevTools port: {self.log_tail()}")
        port, path = lines[0], lines[1]
        self._socket = websocket.create_connection(
            f"ws://127.0.0.1:{port}{path}", timeout=TIMEOUT, suppress_origin=True
        )
        target = self.send("Target.createTarget", url="about:blank")["targetId"]
        attached = self.send("Target.attachToTarget", targetId=target, flatten=True)
        self._session = attached["sessionId"]
        self.send("Page.enable")
        self.send(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        """Run one DevTools command (on the page once there is one); its result."""
        if self._socket is None:
            raise DevToolsError("not connected")
        ident = next(self._ids)
        message: dict[str, Any] = {"id": ident, "method": method, "params": params}
        if self._session:
            message["sessionId"] = self._session
        self._socket.send(json.dumps(message))
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            try:
                answer = json.loads(self._socket.recv())
            except websocket.WebSocketTimeoutException:
                break
            if answer.get("id") != ident:
                continue  # an event, or the answer to another session's command
            if "error" in answer:
                raise DevToolsError(f"{method}: {answer['error']}")
            result: dict[str, Any] = answer.get("result", {})
            return result
        raise DevToolsError(f"{method}: no answer in {TIMEOUT:.0f} s")

    def open(self, url: str, timeout: float = TIMEOUT) -> None:
        """Load ``url`` in the page and wait until its document has loaded."""
        answer = self.send("Page.navigate", url=url)
        if answer.get("errorText"):
            raise DevToolsError(f"cannot open {url}: {answer['errorText']}")
        self.wait_for(
            f"location.href.startsWith({json.dumps(url)}) && document.readyState === 'complete'",
            timeout,
            what=f"{url} to load",
        )

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (awaited if a promise)."""
        answer = self.send(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in answer:
            details = answer["exceptionDetails"]
            thrown = details.get("exception", {}).get("description") or details.get("text")
            raise DevToolsError(f"{expression!r} threw: {thrown}")
        return answer["result"].get("value")

    def wait_for(self, expression: str, timeout: float, *, what: str = "") -> Any:
        """Poll ``expression`` until it is truthy; its value. Fails after ``timeout`` s."""
        value = _poll(lambda: self.evaluate(expression), timeout, every=0.2)
        if not value:
            raise DevToolsError(f"waited {timeout:.0f} s for {what or expression}")
        return value

    def click(self, selector: str) -> None:
        """Click the first element matching the CSS ``selector``, as a script would."""
        found = self.evaluate(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)});"
            " if (!e) return false; e.scrollIntoView(); e.click(); return true; })()"
        )
        if not found:
            raise DevToolsError(f"nothing to click at {selector!r}")

    def screenshot(self, path: Path) -> Path:
        """Save a PNG of the page as it shows now."""
        data = self.send("Page.captureScreenshot", format="png")["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path

    def log_tail(self, lines: int = 10) -> str:
        """The last lines Chromium wrote, for error messages."""
        if self._log.closed:
            return ""
        self._log.seek(0)
        text = self._log.read().decode(errors="replace").strip()
        return " | ".join(text.splitlines()[-lines:])

    def close(self) -> None:
        """Kill the browser and its helpers, and remove the profile. Safe to call twice."""
        if self._socket is not None:
            with contextlib.suppress(Exception):
                self._socket.close()
            self._socket = None
        if self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(timeout=5)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._process.pid, signal.SIGKILL)  # helpers left in its group
        for _ in range(10):  # a helper on its way out may still write to the profile
            shutil.rmtree(self.profile, ignore_errors=True)
            if not self.profile.exists():
                break
            time.sleep(0.1)
        self._log.close()


def _lines(path: Path) -> list[str]:
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        return []
    return lines if len(lines) >= 2 else []


def _poll(probe: Callable[[], T], timeout: float, every: float = 0.05) -> T:
    """``probe()`` until it is truthy or ``timeout`` passes; its last value."""
    deadline = time.monotonic() + timeout
    value = probe()
    while not value and time.monotonic() < deadline:
        time.sleep(every)
        value = probe()
    return value
