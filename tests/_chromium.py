"""A small headless-Chromium driver for tests, standard library only.

Chromium is started with ``--remote-debugging-pipe``: it reads DevTools-protocol commands
(JSON, each ended by a NUL byte) from file descriptor 3 and writes replies and events to file
descriptor 4, so no websocket client is needed.  :class:`Chromium` opens a page, waits for its
load event, and collects what a person's browser would show in its console: console calls,
uncaught exceptions, and browser log entries (failed loads, Content-Security-Policy
violations), plus every network request the page made.

Used by ``tests/test_html.py``; skips cleanly where no Chromium is installed (:func:`find`).
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

#: the flags the machine needs as root in a container (no sandbox, no GPU, no network chatter)
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--hide-scrollbars", "--mute-audio",
         "--remote-debugging-pipe"]


def find() -> str | None:
    """The Chromium executable (``$CHROMIUM``, else ``chromium`` or ``chromium-browser`` on the
    PATH), or ``None``."""
    env = os.environ.get("CHROMIUM")
    if env:
        return env if os.path.exists(env) else None
    return shutil.which("chromium") or shutil.which("chromium-browser")


_TRAMPOLINE = ("import os, sys\n"
               "r, w = int(sys.argv[1]), int(sys.argv[2])\n"
               "os.dup2(r, 3); os.dup2(w, 4); os.close(r); os.close(w)\n"
               "os.execv(sys.argv[3], sys.argv[3:])\n")


def _high(fd: int) -> int:
    """``fd`` moved to a number ≥ 10 (so that moving it to 3 or 4 in the child cannot clash)."""
    new = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return new


@dataclass
class PageVisit:
    """What loading one page gave."""

    url: str
    console: list[dict] = field(default_factory=list)  # console calls, exceptions, log entries
    requests: list[str] = field(default_factory=list)  # every URL the page requested
    facts: dict[str, Any] = field(default_factory=dict)  # the result of the probe script
    screenshot: bytes = b""  # PNG of the viewport

    @property
    def errors(self) -> list[dict]:
        """Console messages at level error (and uncaught exceptions)."""
        return [m for m in self.console if m["level"] in ("error", "exception")]


class Chromium:
    """One headless Chromium process, driven over its DevTools pipe (use as a context manager)."""

    def __init__(self, executable: str, *, timeout: float = 30.0, width: int = 1100,
                 height: int = 1400):
        self.timeout = timeout
        self.size = (width, height)
        self._profile = tempfile.mkdtemp(prefix="icltheory-chromium-")
        to_browser_r, self._to_browser = (_high(fd) for fd in os.pipe())
        self._from_browser, from_browser_w = (_high(fd) for fd in os.pipe())
        # the browser must get the pipe ends as fds 3 and 4: a small Python trampoline moves
        # them there and execs the browser (preexec_fn would run before close_fds)
        self._log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _TRAMPOLINE, str(to_browser_r), str(from_browser_w),
             executable, *FLAGS, f"--user-data-dir={self._profile}",
             f"--window-size={width},{height}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=self._log, stderr=self._log,
            pass_fds=(to_browser_r, from_browser_w))
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buf = b""
        self._next_id = 0
        self._events: list[dict] = []

    # -- the protocol ---------------------------------------------------------------------
    def _read_message(self, deadline: float) -> dict:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("Chromium did not answer in time" + self._tail())
            ready, _, _ = select.select([self._from_browser], [], [], left)
            if ready:
                chunk = os.read(self._from_browser, 1 << 20)
                if not chunk:
                    raise RuntimeError("Chromium closed its DevTools pipe" + self._tail())
                self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        """Send one command and return its result (events that arrive meanwhile are kept)."""
        self._next_id += 1
        msg: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._to_browser, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self._events.append(reply)

    def _wait_event(self, method: str, session: str) -> dict:
        deadline = time.monotonic() + self.timeout
        while True:
            for i, ev in enumerate(self._events):
                if ev.get("method") == method and ev.get("sessionId") == session:
                    return self._events.pop(i)
            self._events.append(self._read_message(deadline))

    def _tail(self) -> str:
        self._log.seek(0)
        text = self._log.read().decode("utf-8", "replace").strip().splitlines()[-5:]
        return (": " + " | ".join(text)) if text else ""

    # -- pages ----------------------------------------------------------------------------
    def visit(self, url: str, probe: str = "null") -> PageVisit:
        """Open ``url`` in a new tab, wait for its load event, evaluate the JavaScript
        expression ``probe`` (its JSON value goes to ``facts``), take a screenshot, and
        close the tab.  (The pages under test have no script: the probe is the test's.)"""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable", session=session)
        w, h = self.size
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": w, "height": h, "deviceScaleFactor": 1, "mobile": False},
                  session=session)
        self._events.clear()
        nav = self.send("Page.navigate", {"url": url}, session=session)
        if nav.get("errorText"):
            raise RuntimeError(f"navigating to {url}: {nav['errorText']}")
        self._wait_event("Page.loadEventFired", session)
        facts = self.send("Runtime.evaluate", {"expression": probe, "returnByValue": True},
                          session=session)
        shot = self.send("Page.captureScreenshot", {"format": "png"}, session=session)
        visit = PageVisit(url, facts=facts.get("result", {}).get("value"),
                          screenshot=base64.b64decode(shot["data"]))
        for ev in self._events:
            if ev.get("sessionId") != session:
                continue
            p = ev.get("params", {})
            if ev["method"] == "Runtime.consoleAPICalled":
                text = " ".join(str(a.get("value", a.get("description", ""))) for a in
                                p.get("args", []))
                visit.console.append({"level": "error" if p["type"] in ("error", "assert")
                                      else p["type"], "text": text})
            elif ev["method"] == "Runtime.exceptionThrown":
                visit.console.append({"level": "exception",
                                      "text": p["exceptionDetails"].get("text", "")})
            elif ev["method"] == "Log.entryAdded":
                e = p["entry"]
                visit.console.append({"level": e["level"], "text": e.get("text", ""),
                                      "url": e.get("url", "")})
            elif ev["method"] == "Network.requestWillBeSent":
                visit.requests.append(p["request"]["url"])
        self._events.clear()
        self.send("Target.closeTarget", {"targetId": target})
        return visit

    # -- lifetime -------------------------------------------------------------------------
    def close(self) -> None:
        """Close the browser (politely, then by force) and remove its profile folder."""
        try:
            if self.proc.poll() is None:
                try:
                    self.send("Browser.close")
                except Exception:
                    pass
                try:
                    self.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(timeout=5)
        finally:
            for fd in (self._to_browser, self._from_browser):
                try:
                    os.close(fd)
                except OSError:
                    pass
            self._log.close()
            shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
