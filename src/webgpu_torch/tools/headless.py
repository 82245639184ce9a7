"""Headless Chromium driven over the DevTools protocol on a pipe: open a page on a software adapter, evaluate
expressions in it, wait for a state, choose a file, take a screenshot, measure its processes' memory. For the
page's tests and the side-by-side benchmark.

Chromium reads protocol commands from its fd 3 and writes replies and events to its fd 4, each a JSON object
ended by a NUL byte (`--remote-debugging-pipe`): no port, no websocket, nothing but the standard library.
The flags per adapter are web/chromium.json's, shared with js/browser/chromium.js.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

CONFIG = json.loads((Path(__file__).with_name("web") / "chromium.json").read_text())
ADAPTERS = tuple(CONFIG["adapters"])


class BrowserError(RuntimeError):
    """Chromium could not be started, closed, or a page reported an error."""


def binary() -> str:
    """The Chromium to start: $CHROMIUM, else `chromium` on the PATH."""
    name = os.environ.get("CHROMIUM", "chromium")
    path = shutil.which(name)
    if path is None:
        raise BrowserError(f"no Chromium ({name} is not on the PATH; `scripts/setup --browser` installs it, "
                           "or set CHROMIUM)")
    return path


class Chromium:
    """One headless Chromium with one page, attached over the pipe. Use as a context manager."""

    def __init__(self, adapter: str = "swiftshader", size: tuple[int, int] = (1200, 900)):
        if adapter not in CONFIG["adapters"]:
            raise ValueError(f"adapter {adapter!r}: one of {', '.join(ADAPTERS)}")
        self.feature_level = CONFIG["adapters"][adapter]["featureLevel"]
        self._profile = tempfile.TemporaryDirectory(prefix="webgpu-torch-chromium-")
        to_browser, self._commands = os.pipe()
        self._replies, from_browser = os.pipe()

        def pipes_at_3_and_4():  # in the child, before exec
            os.dup2(to_browser, 3)
            os.dup2(from_browser, 4)

        args = [binary(), *CONFIG["common"], *CONFIG["adapters"][adapter]["flags"], "--remote-debugging-pipe",
                f"--user-data-dir={self._profile.name}", f"--window-size={size[0]},{size[1]}", "about:blank"]
        # pass_fds keeps 3 and 4 open through exec (they are closed after preexec_fn runs).
        self._process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL, preexec_fn=pipes_at_3_and_4, pass_fds=(3, 4))
        os.close(to_browser)
        os.close(from_browser)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict] = []  # console messages and exceptions, for diagnostics
        targets = self.send("Target.getTargets")["targetInfos"]
        page = next(t["targetId"] for t in targets if t["type"] == "page")
        self._session = self.send("Target.attachToTarget", targetId=page, flatten=True)["sessionId"]
        self.send("Runtime.enable", session=True)
        self.send("Emulation.setDeviceMetricsOverride", session=True, width=size[0], height=size[1],
                  deviceScaleFactor=1, mobile=False)

    def send(self, method: str, session: bool = False, **params) -> dict:
        """Send a command (to the page's session if `session`) and return its result."""
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = self._session
        os.write(self._commands, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read()
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error'].get('message')}")
                return reply.get("result", {})
            if reply.get("method") in ("Runtime.consoleAPICalled", "Runtime.exceptionThrown"):
                self.events.append(reply["params"])

    def _read(self) -> dict:
        while b"\0" not in self._buffer:
            chunk = os.read(self._replies, 1 << 20)
            if not chunk:
                raise BrowserError(f"Chromium closed its pipe (exit code {self._process.poll()})")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def open(self, url: str) -> None:
        self.send("Page.navigate", session=True, url=url)

    def evaluate(self, expression: str):
        """The value of a JavaScript expression in the page (a promise is awaited), as JSON gives it."""
        result = self.send("Runtime.evaluate", session=True, expression=expression, returnByValue=True,
                           awaitPromise=True)
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression}: {result['exceptionDetails'].get('text')} "
                               f"{result['exceptionDetails'].get('exception', {}).get('description', '')}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float, poll: float = 0.5):
        """Evaluate `expression` until it is truthy (then return it), for at most `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise BrowserError(f"waited {timeout:.0f} s for {expression}; console: {self.console()[-5:]}")
            time.sleep(poll)

    def console(self) -> list[str]:
        """The page's console messages and uncaught exceptions so far, as text."""
        out = []
        for e in self.events:
            if "exceptionDetails" in e:
                out.append(e["exceptionDetails"].get("exception", {}).get("description", e["exceptionDetails"]["text"]))
            else:
                out.append(" ".join(str(a.get("value", a.get("description", ""))) for a in e.get("args", [])))
        return out

    def set_file(self, selector: str, path: str | Path) -> None:
        """Choose `path` in the page's file input `selector`, as a user would (its change event fires)."""
        root = self.send("DOM.getDocument", session=True)["root"]["nodeId"]
        node = self.send("DOM.querySelector", session=True, nodeId=root, selector=selector)["nodeId"]
        self.send("DOM.setFileInputFiles", session=True, nodeId=node, files=[str(path)])

    def memory(self, reset: bool = False) -> dict[int, tuple[int, int]]:
        """Each process of this Chromium (the browser, its renderers, its GPU process: its descendants) by pid,
        with its resident set and the most it has held since it started or its last reset, in bytes (Linux's
        /proc/PID/status VmRSS, VmHWM); `reset` first resets each one's peak to its resident set."""
        children: dict[int, list[int]] = {}
        for stat in Path("/proc").glob("[0-9]*/stat"):
            with contextlib.suppress(OSError):  # a process that ended meanwhile
                fields = stat.read_text().rsplit(")", 1)[1].split()
                children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
        pids, out = [self._process.pid], {}
        while pids:
            pid = pids.pop()
            pids += children.get(pid, [])
            with contextlib.suppress(OSError, KeyError):  # ended, or a zombie (no VmRSS)
                if reset:
                    Path(f"/proc/{pid}/clear_refs").write_text("5")
                status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
                out[pid] = (int(status["VmRSS"].split()[0]) * 1024, int(status["VmHWM"].split()[0]) * 1024)
        return out

    def screenshot(self, path: str | Path) -> None:
        data = self.send("Page.captureScreenshot", session=True, format="png")["data"]
        Path(path).write_bytes(base64.b64decode(data))

    def close(self) -> None:
        if self._process.poll() is None:
            # An orderly exit: its helper processes end before it does, so none still writes to the profile
            # as it is removed (after a signal, they may). It may close the pipe before it replies.
            with contextlib.suppress(OSError, BrowserError):
                self.send("Browser.close")
            try:
                self._process.wait(10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        os.close(self._commands)
        os.close(self._replies)
        self._profile.cleanup()

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
