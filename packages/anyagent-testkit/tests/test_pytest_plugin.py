"""The pytest plugin, exercised through a real pytest subprocess (it loads via the pytest11 entry point)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TESTS = """
import httpx
import pytest


@pytest.mark.live
def test_marked_live():
    pass


def test_plain(fake_model):
    answer = httpx.post(fake_model.url + "/v1/messages", json={"messages": [{"role": "user", "content": "hi"}]})
    assert answer.status_code == 200


def test_wants_a_cli(live_agent):
    live_agent("claude")
"""


def _pytest(tmp_path: Path, *args: str, path: str | None = None) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_sample.py").write_text(TESTS, encoding="utf-8")
    env = {**os.environ, "PATH": path if path is not None else os.environ.get("PATH", "")}
    env.pop("ANYAGENT_LIVE_CACHE", None)
    argv = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-rs",
        "-q",
        str(tmp_path / "test_sample.py"),
        *args,
    ]
    return subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env, check=False)


def test_live_tests_are_skipped_without_the_live_option(tmp_path: Path) -> None:
    done = _pytest(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed, 2 skipped" in done.stdout
    assert "pass --live to run the real agent CLIs" in done.stdout


def test_with_live_a_cli_that_cannot_be_installed_fails_loudly(tmp_path: Path) -> None:
    done = _pytest(tmp_path, "--live", "--live-cache", str(tmp_path / "cache"), path=str(tmp_path / "no-npm-here"))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 failed, 2 passed" in done.stdout
    assert "live tier: cannot install claude: npm is not on PATH" in done.stdout
