"""Regenerate docs/images/ui-chat.png, ui-threads.png and ui-usage.png (``nox -s screenshots``): ``anyagent ui`` against
scripted agents, driven in chromium like the browser suite."""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

from playwright.sync_api import expect, sync_playwright

sys.path.insert(0, str(Path(__file__).parent))
from conftest import ARGS, CHROMIUM, Ui

ROOT = Path(__file__).resolve().parents[3]
IMAGES = ROOT / "docs" / "images"


def thread(page: object, workdir: Path, prompt: str, *, wait: str) -> None:
    from test_ui_mock import new_thread, send

    new_thread(page, workdir)
    send(page, prompt)
    expect(page.locator("#chat-status")).to_have_text(wait)  # type: ignore[attr-defined]


def main() -> None:
    IMAGES.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        work = Path(tmp) / "acme-api"
        work.mkdir()
        store = Path(tmp) / "threads.db"
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1280, "height": 800}, device_scale_factor=1)
        page.emulate_media(color_scheme="light")
        ask = Ui(store, "ask.json")
        page.goto(ask.url)
        thread(page, work, "Add the invoices table and run the migration", wait="Needs input")
        page.keyboard.press("Escape")  # the permission stays open: its thread shows Needs input
        demo = Ui(store, "demo.json")
        try:
            page.goto(demo.url)
            thread(page, work, "Update the README with the new CLI flags", wait="Idle")
            thread(page, work, "test_last_line fails with an IndexError: fix it", wait="Idle")
            page.locator(".tool").first.evaluate("e => e.open = true")
            page.locator(".tool").nth(1).evaluate("e => e.open = true")
            page.wait_for_timeout(300)
            page.screenshot(path=str(IMAGES / "ui-chat.png"))
            page.emulate_media(color_scheme="dark")
            page.set_viewport_size({"width": 420, "height": 760})
            page.click("#back")
            page.wait_for_timeout(300)
            page.screenshot(path=str(IMAGES / "ui-threads.png"))
        finally:
            demo.stop()
            ask.stop()
        plan = Ui(store, str(_plan_script(Path(tmp))))
        try:
            page.emulate_media(color_scheme="light")
            page.set_viewport_size({"width": 1280, "height": 800})
            page.goto(plan.url)
            page.click("#plan-button")
            dialog = page.locator("#usage-dialog")
            expect(dialog.locator(".plan-card [role=meter]")).to_have_count(3)  # type: ignore[attr-defined]
            page.wait_for_timeout(300)
            dialog.screenshot(path=str(IMAGES / "ui-usage.png"))
        finally:
            plan.stop()
            browser.close()
    print(f"wrote {IMAGES / 'ui-chat.png'}, {IMAGES / 'ui-threads.png'} and {IMAGES / 'ui-usage.png'}")


def _plan_script(tmp: Path) -> Path:
    """A mock agent whose plan has a 5-hour and two weekly windows, resetting from now."""
    now = int(time.time())

    def window(label: str, used: float, resets_in: int | None) -> dict[str, object]:
        at = None if resets_in is None else {"secs_since_epoch": now + resets_in, "nanos_since_epoch": 0}
        return {"label": label, "used_percent": used, "resets_at": at}

    plan = {
        "plan": "Max 5x",
        "windows": [
            window("5 hours", 38.0, 2 * 3600 + 25 * 60),
            window("week", 74.5, 3 * 86400),
            window("week (Opus)", 93.0, 3 * 86400),
        ],
    }
    path = tmp / "plan.json"
    path.write_text(json.dumps({"plan_usage": plan, "turns": []}), encoding="utf-8")
    return path


if __name__ == "__main__":
    main()
