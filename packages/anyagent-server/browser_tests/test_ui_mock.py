"""``anyagent ui`` in a real browser against the mock agent (the server is a real subprocess)."""

from __future__ import annotations

import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from conftest import start
from playwright.sync_api import expect


def new_thread(page: Any, workdir: Path) -> None:
    page.click("#new-thread")
    expect(page.locator("#new-dialog")).to_be_visible()
    page.check("input[name=agent][value=mock]")
    page.fill("#new-dir", str(workdir))
    page.click("#new-open")
    expect(page.locator("#composer")).to_be_visible()


def send(page: Any, text: str) -> None:
    page.fill("#prompt", text)
    page.keyboard.press("Enter")


def test_token_becomes_a_cookie_and_other_origins_are_refused(store: Path) -> None:
    ui = start(store)
    try:
        # without the cookie: 403 for the page, the API and the socket's upgrade
        for path in ("/", "/api/threads", "/static/app.js"):
            with pytest.raises(urllib.error.HTTPError) as info:
                urllib.request.urlopen(ui.base.rstrip("/") + path)
            assert info.value.code == 403
        opener = urllib.request.build_opener(_NoRedirect)
        with pytest.raises(urllib.error.HTTPError) as info:
            opener.open(ui.url)
        assert info.value.code == 303
        cookie = info.value.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
        jar = cookie.split(";")[0]
        ok = urllib.request.Request(ui.base.rstrip("/") + "/api/threads", headers={"Cookie": jar})
        assert urllib.request.urlopen(ok).status == 200
        evil = urllib.request.Request(
            ui.base.rstrip("/") + "/api/threads", headers={"Cookie": jar, "Origin": "http://evil.example"}
        )
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(evil)
        assert info.value.code == 403
    finally:
        assert ui.stop() == 0


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def test_new_thread_streams_and_permission_allow(page: Any, store: Path, workdir: Path) -> None:
    ui = start(store)
    try:
        page.goto(ui.url)
        assert "token" not in page.url  # the token left the address bar for a cookie
        new_thread(page, workdir)
        send(page, "run the tests")
        dialog = page.locator("#permission-dialog")
        expect(dialog).to_be_visible()
        # exactly the options the agent offered, in its order
        expect(dialog.locator("#permission-options button")).to_have_text(["Allow Once", "Allow Always", "Deny Once"])
        expect(page.locator("#chat-status")).to_have_text("Needs input")
        expect(page.locator(".message.agent strong")).to_have_text("run the tests")
        dialog.locator("button[data-option=AllowOnce]").click()
        expect(dialog).to_be_hidden()
        expect(page.locator("pre.code")).to_contain_text("def test_ok")
        expect(page.locator("pre.code .kw").first).to_have_text("def")
        expect(page.locator(".reasoning summary")).to_have_text("Reasoning")
        expect(page.locator("#chat-status")).to_have_text("Idle")
        expect(page.locator("#delivery")).to_have_text("Started a turn")
        # the thread list shows it, titled by the first prompt
        expect(page.locator(".thread-title").first).to_have_text("run the tests")
    finally:
        assert ui.stop() == 0


def test_thread_list_after_a_restart(page: Any, store: Path, workdir: Path) -> None:
    ui = start(store)
    try:
        page.goto(ui.url)
        new_thread(page, workdir)
        send(page, "first thread")
        page.locator("#permission-dialog button[data-option=DenyOnce]").click()
        expect(page.locator("#chat-status")).to_have_text("Idle")
    finally:
        assert ui.stop() == 0
    ui = start(store)
    try:
        page.goto(ui.url)
        row = page.locator(".thread-button", has_text="first thread")
        expect(row).to_be_visible()
        expect(row.locator(".badge")).to_have_text("Idle")
        row.click()
        expect(page.locator(".message.user")).to_have_text("first thread")
        expect(page.locator(".message.agent").first).to_contain_text("Let me run the tests")
        page.fill("#search", "no such words")
        expect(page.locator("#threads .empty")).to_have_text("No thread matches.")
        page.fill("#search", "first")
        expect(page.locator(".thread-button")).to_have_count(1)
    finally:
        assert ui.stop() == 0
