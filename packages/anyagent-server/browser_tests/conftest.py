"""The browser suite (``nox -s browser``): ``anyagent ui`` as a real subprocess, driven by Playwright in
Debian's chromium (``CHROMIUM``, default ``/usr/bin/chromium``; Playwright's own download is not used)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent
SCRIPTS = HERE / "scripts"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


class Ui:
    """One ``anyagent ui`` process: ``url`` (with the token), ``base`` (without)."""

    def __init__(self, store: Path, script: str | None, env: dict[str, str] | None = None) -> None:
        exe = shutil.which("anyagent") or str(Path(sys.executable).with_name("anyagent"))
        cmd = [exe, "ui", "--no-browser", "--store", str(store)]
        if script is not None:
            cmd += ["--mock", str(SCRIPTS / script)]
        self.proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, **(env or {})}
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"anyagent ui did not start: {self.proc.stderr.read() if self.proc.stderr else ''}")
        self.info: dict[str, Any] = json.loads(line)
        self.url: str = self.info["url"]
        self.base = self.url.split("?", 1)[0]

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()
        return self.proc.returncode


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.skip(f"no chromium at {CHROMIUM} (apt-get install chromium)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield b
        b.close()


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "threads.db"


@pytest.fixture
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as d:
        yield Path(d)


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1200, "height": 800})
    context.set_default_timeout(15_000)
    pg = context.new_page()
    yield pg
    context.close()


def start(store: Path, script: str | None = "chat.json", **kw: Any) -> Ui:
    """Start ``anyagent ui`` on ``store`` playing ``script`` (under browser_tests/scripts)."""
    return Ui(store, script, **kw)
