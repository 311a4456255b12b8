"""``anyagent ui`` in chromium against the real pinned ``claude`` CLI and the testkit's fake model: one full
turn with a permission (``nox -s browser -- --live`` or ``pytest -m live --live``; marked ``live``)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import start
from playwright.sync_api import expect

from anyagent_testkit.live import LiveAgent

pytestmark = pytest.mark.live


def test_claude_turn_with_a_permission(
    page: Any, store: Path, live_agent: Callable[..., LiveAgent], fake_model: object
) -> None:
    agent = live_agent("claude")
    env = dict(agent.env)
    env["PATH"] = os.pathsep.join([str(agent.executable.parent), env.get("PATH", "")])
    ui = start(store, None, env=env)
    try:
        page.goto(ui.url)
        page.click("#new-thread")
        page.check("input[name=agent][value=claude]")
        page.fill("#new-dir", str(agent.workspace))
        page.click("#new-open")
        expect(page.locator("#composer")).to_be_visible(timeout=60_000)
        target = agent.workspace / "allowed.txt"
        page.fill("#prompt", f"WRITE {target} ALPHA")
        page.click("#send")
        dialog = page.locator("#permission-dialog")
        expect(dialog).to_be_visible(timeout=60_000)
        expect(dialog.locator("#permission-options button")).to_have_text(["Allow Once", "Allow Always", "Deny Once"])
        dialog.locator("button[data-option=AllowOnce]").click()
        expect(page.locator("#chat-status")).to_have_text("Idle", timeout=60_000)
        expect(page.locator(".tool .tool-status").last).to_have_text("done")
        expect(page.locator(".diff .add")).to_contain_text("ALPHA")
        expect(page.locator("#transcript")).to_contain_text("The tool finished")
        assert target.read_text() == "ALPHA\n"
        expect(page.locator(".thread-button .badge").first).to_have_text("Idle")
    finally:
        assert ui.stop() == 0
