"""Regenerate docs/images/ui-chat.png and ui-threads.png (``nox -s screenshots``): ``anyagent ui`` against
scripted agents, driven in chromium like the browser suite."""

from __future__ import annotations

import sys
import tempfile
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
            browser.close()
    print(f"wrote {IMAGES / 'ui-chat.png'} and {IMAGES / 'ui-threads.png'}")


if __name__ == "__main__":
    main()
