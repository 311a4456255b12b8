"""Continuing a stored thread from ``anyagent ui`` after a restart: the mock agent with the resume
capability (``"capabilities": ["resume"]`` in its script), the server a real subprocess each time."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import anyio
from conftest import start
from playwright.sync_api import expect
from test_ui_mock import new_thread, send

from anyagent import TextDelta, UserMessage
from anyagent_store import Store

TICKS = "tick " * 20 + "continued"
T = TypeVar("T")


def run(fn: Callable[[], Awaitable[T]]) -> T:
    """``anyio.run(fn)`` in another thread (Playwright's sync API keeps an event loop in this one)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(anyio.run, fn).result()


def threads(page: Any, base: str) -> list[dict[str, Any]]:
    """The thread list as the page's API gives it (the page's cookie)."""
    found: list[dict[str, Any]] = page.request.get(base.rstrip("/") + "/api/threads").json()["threads"]
    return found


def stored(path: Path) -> list[tuple[str, str]]:
    """What the store holds for its one thread: (kind, text) of every prompt and of every message's text, in
    order (the store keeps a run of deltas as one or a few deltas, as they were written: they are joined here)."""

    async def read() -> list[tuple[str, str]]:
        async with Store.sqlite(path) as store:
            (thread,) = (await store.threads()).threads
            said = []
            for item in await store.history(thread):
                kind = item.event.kind if item.event is not None else None
                if isinstance(kind, TextDelta) and said and said[-1][0] == "TextDelta":
                    said[-1] = ("TextDelta", said[-1][1] + kind.text)
                elif isinstance(kind, (UserMessage, TextDelta)):
                    said.append((type(kind).__name__, kind.text))
            return said

    return run(read)


def first_thread(page: Any, store: Path, workdir: Path) -> None:
    """One thread made by an ``anyagent ui`` that is then stopped."""
    ui = start(store, "resume-first.json")
    try:
        page.goto(ui.url)
        new_thread(page, workdir)
        send(page, "hello")
        expect(page.locator(".message.agent")).to_have_text(["first answer"])
        expect(page.locator("#chat-status")).to_have_text("Idle")
    finally:
        assert ui.stop() == 0


def test_a_stored_thread_continues_into_the_same_thread(page: Any, store: Path, workdir: Path) -> None:
    first_thread(page, store, workdir)
    ui = start(store, "resume-next.json")
    try:
        page.goto(ui.url)
        (before,) = threads(page, ui.base)
        page.locator(".thread-button", has_text="hello").click()
        expect(page.locator(".message.user")).to_have_text(["hello"])  # the history, once
        expect(page.locator(".message.agent")).to_have_text(["first answer"])
        expect(page.locator(".note.seam")).to_have_text("Stored thread: a prompt continues it")
        expect(page.locator("#composer")).to_be_visible()
        send(page, "go on")
        expect(page.locator(".message.agent")).to_have_text(["first answer", TICKS], timeout=20_000)
        expect(page.locator(".message.user")).to_have_text(["hello", "go on"])
        expect(page.locator("#chat-status")).to_have_text("Idle")
        send(page, "one more")  # the continued session takes further prompts
        expect(page.locator(".message.agent")).to_have_text(["first answer", TICKS, "and more"])
        expect(page.locator(".thread-button")).to_have_count(1)
        deadline = time.monotonic() + 10
        while True:  # the store writes a turn's events at its end; the list reads them back
            (after,) = threads(page, ui.base)
            if (after["events"] > before["events"] and after["status"] == "idle") or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert after["id"] == before["id"] and after["session"]  # the same thread, live now
        assert after["updated_at"] > before["updated_at"] and after["events"] > before["events"]
        expect(page.locator(".thread-button .badge")).to_have_text("Idle")
        said = stored(store)
        assert said == [
            ("UserMessage", "hello"),
            ("TextDelta", "first answer"),
            ("UserMessage", "go on"),
            ("TextDelta", "tick " * 20 + "continued"),
            ("UserMessage", "one more"),
            ("TextDelta", "and more"),
        ]
    finally:
        assert ui.stop() == 0


def test_reload_mid_turn_on_a_continued_thread_shows_every_event_once(page: Any, store: Path, workdir: Path) -> None:
    first_thread(page, store, workdir)
    ui = start(store, "resume-next.json")
    try:
        page.goto(ui.url)
        page.locator(".thread-button", has_text="hello").click()
        expect(page.locator(".message.agent")).to_have_text(["first answer"])
        send(page, "go on")
        expect(page.locator(".message.agent").nth(1)).to_contain_text("tick tick tick")
        page.reload()
        expect(page.locator("#chat-status")).to_have_text("Working")
        expect(page.locator(".message.user")).to_have_text(["hello", "go on"])
        expect(page.locator(".message.agent")).to_have_text(["first answer", TICKS], timeout=20_000)
        expect(page.locator("#chat-status")).to_have_text("Idle")
        expect(page.locator(".thread-button")).to_have_count(1)
        expect(page.locator("#composer")).to_be_visible()
    finally:
        assert ui.stop() == 0


def test_a_thread_that_cannot_continue_is_read_only_with_the_typed_reason(
    page: Any, store: Path, workdir: Path
) -> None:
    first_thread(page, store, workdir)

    async def elsewhere() -> None:
        async with Store.sqlite(store) as opened:
            await opened.create_thread("nonesuch", cwd=str(workdir), title="on another agent", resume_token="tok")

    run(elsewhere)
    ui = start(store, "chat.json")  # this mock cannot resume
    try:
        page.goto(ui.url)
        page.locator(".thread-button", has_text="on another agent").click()
        expect(page.locator(".note.read-only")).to_contain_text("Read-only: NotInstalled: no agent 'nonesuch'")
        expect(page.locator("#composer")).to_be_hidden()
        page.locator(".thread-button", has_text="hello").click()
        expect(page.locator(".message.agent")).to_have_text(["first answer"])
        send(page, "go on")  # the agent refuses the resume token: the typed error, then read-only
        expect(page.locator(".note.read-only")).to_have_text("Read-only: ResumeFailed: the mock agent cannot resume")
        expect(page.locator("#error")).to_contain_text("ResumeFailed")
        expect(page.locator("#composer")).to_be_hidden()
        expect(page.locator(".thread-button")).to_have_count(2)  # no thread was added
        # the store's hand-off: a new thread on the installed agent, its first prompt the conversation
        page.locator(".thread-button", has_text="on another agent").click()
        page.locator("form.handoff select").select_option("mock")
        page.locator("form.handoff button").click()
        expect(page.locator(".note.handoff")).to_contain_text("Continued from “on another agent”")
        expect(page.locator("#permission-dialog")).to_be_visible()  # chat.json's first turn
        page.locator("#permission-dialog button[data-option=DenyOnce]").click()
        expect(page.locator("#chat-status")).to_have_text("Idle")
        expect(page.locator(".thread-button", has_text="on another agent")).to_have_count(2)
    finally:
        assert ui.stop() == 0
