"""Live tier, the new user's path: a fresh clone, the README's install lines (pip, in a new venv), then
``anyagent run claude "hi" > out.txt`` with the pinned real ``claude`` against the testkit's fake model:
only the answer lands in the file; ``-`` takes the prompt from stdin.

Run with ``pytest --live``.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import venv
from collections.abc import Callable
from pathlib import Path

import pytest

from anyagent_testkit.fakemodel import ECHO_PREFIX, FakeModel
from anyagent_testkit.live import LiveAgent

pytestmark = [pytest.mark.live]

ROOT = Path(__file__).resolve().parents[3]


def _readme_install_lines(readme: Path) -> list[list[str]]:
    section = readme.read_text(encoding="utf-8").split("## Install", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block is not None, "the README's Install section has no bash block"
    lines = [shlex.split(line, comments=True) for line in block[1].splitlines()]
    return [words for words in lines if words[:2] == ["pip", "install"]]


@pytest.mark.skipif(not (ROOT / ".git").exists() or shutil.which("git") is None, reason="needs the git checkout")
def test_a_fresh_clone_installs_from_the_readme_and_run_writes_only_the_answer(
    live_agent: Callable[..., LiveAgent], fake_model: FakeModel, tmp_path: Path
) -> None:
    agent = live_agent("claude")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(clone)], check=True, timeout=120)
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    lines = _readme_install_lines(clone / "README.md")
    assert lines
    for words in lines:  # as written, from the clone's root
        subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *words[2:]],
            cwd=clone,
            check=True,
            timeout=600,
        )
    env = {
        **agent.env,
        "PATH": os.pathsep.join([str(agent.executable.parent), str(env_dir / "bin"), agent.env["PATH"]]),
        "ANYAGENT_NO_LOGIN_SHELL": "1",
    }
    out = tmp_path / "out.txt"

    def anyagent(command: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["/bin/sh", "-c", command],
            input=stdin,
            cwd=agent.workspace,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )

    ran = anyagent(f'anyagent run claude "hi" > {shlex.quote(str(out))}')
    assert ran.returncode == 0, ran.stderr
    assert out.read_text() == f"{ECHO_PREFIX}hi\n"
    assert "— turn done" in ran.stderr
    assert "resume: anyagent run claude --resume " in ran.stderr
    piped = anyagent("anyagent run claude -", stdin="from stdin\n")
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout == f"{ECHO_PREFIX}from stdin\n"
