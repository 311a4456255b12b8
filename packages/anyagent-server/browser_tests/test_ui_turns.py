"""``anyagent ui`` in chromium against the mock agent: question, queue + dequeue, cancel, settings,
a withdrawn request, reload mid-turn."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conftest import start
from playwright.sync_api import expect
from test_ui_mock import new_thread, send


def test_question_with_choices_multi_select_and_free_text(page: Any, store: Path, workdir: Path) -> None:
    ui = start(store, "question.json")
    try:
        page.goto(ui.url)
        new_thread(page, workdir)
        send(page, "start a project")
        dialog = page.locator("#question-dialog")
        expect(dialog).to_be_visible()
        expect(dialog.locator("fieldset[data-question=lang] input[type=checkbox]")).to_have_count(2)
        dialog.get_by_label("Python").check()
        dialog.get_by_label("Rust").check()
        dialog.locator("fieldset[data-question=name] .free-text").fill("demo")
        dialog.locator("#question-send").click()
        expect(dialog).to_be_hidden()
        expect(page.locator(".message.agent").last).to_have_text("Thanks.")
        expect(page.locator("#chat-status")).to_have_text("Idle")
    finally:
        assert ui.stop() == 0


def test_queue_then_dequeue_then_cancel(page: Any, store: Path, workdir: Path) -> None:
    ui = start(store, "long.json")
    try:
        page.goto(ui.url)
        new_thread(page, workdir)
        send(page, "build it")
        expect(page.locator("#chat-status")).to_have_text("Working")
        expect(page.locator(".tool .tool-title")).to_have_text("make build")
        expect(page.locator(".tool .tool-kind")).to_have_text("Execute")
        send(page, "and then deploy")  # the mock does not steer: the engine queues it
        expect(page.locator("#delivery")).to_have_text("Queued, #1 in line")
        queued = page.locator("#queue .queued")
        expect(queued).to_have_count(1)
        expect(queued).to_contain_text("and then deploy")
        queued.get_by_role("button", name="withdraw").click()
        expect(queued).to_have_count(0)
        page.click("#cancel")
        expect(page.locator(".note.stop")).to_contain_text("Turn cancelled")
        expect(page.locator("#chat-status")).to_have_text("Idle")
        assert "finished" not in page.locator("#transcript").inner_text()
        # the withdrawn prompt never ran: the next prompt gets the next turn
        send(page, "next")
        expect(page.locator(".message.agent").last).to_have_text("second turn")
        assert "and then deploy" not in [m.strip() for m in page.locator(".message.agent").all_inner_texts()]
    finally:
        assert ui.stop() == 0


def test_settings_change_live_and_at_next_open(page: Any, store: Path, workdir: Path) -> None:
    ui = start(store, "long.json")
    try:
        page.goto(ui.url)
        new_thread(page, workdir)
        page.click("#settings-button")
        dialog = page.locator("#settings-dialog")
        expect(dialog).to_be_visible()
        model = dialog.locator("select[data-option=model]")
        expect(model).to_have_value("sonnet")
        expect(dialog.locator(".setting", has_text="Fast mode")).to_contain_text("applies at next open")
        model.select_option("opus")
        expect(dialog.locator(".setting", has_text="Model").locator(".hint")).to_have_text("applied")
        dialog.get_by_role("button", name="Close").click()
        page.click("#settings-button")
        expect(page.locator("#settings-dialog select[data-option=model]")).to_have_value("opus")
    finally:
        assert ui.stop() == 0


def test_a_withdrawn_permission_closes_its_dialog(page: Any, store: Path, workdir: Path) -> None:
    ui = start(store, "withdraw.json")
    try:
        page.goto(ui.url)
        new_thread(page, workdir)
        send(page, "tidy up")
        dialog = page.locator("#permission-dialog")
        expect(dialog).to_be_visible()
        expect(page.locator("#permission-title")).to_have_text("edit main.py — the agent wants to edit")
        expect(dialog.locator("#permission-options button")).to_have_text(["Allow Once", "Deny Once"])
        expect(dialog).to_be_hidden()  # the agent withdrew it
        expect(page.locator(".message.agent").last).to_have_text("Never mind.")
    finally:
        assert ui.stop() == 0


def test_reload_mid_turn_shows_every_event_once(page: Any, store: Path, workdir: Path) -> None:
    ui = start(store, "long.json")
    try:
        page.goto(ui.url)
        new_thread(page, workdir)
        send(page, "build it")
        expect(page.locator(".message.agent")).to_contain_text("tick tick tick")
        page.reload()
        expect(page.locator("#chat-status")).to_have_text("Working")
        expect(page.locator(".message.agent")).to_have_text("tick " * 25 + "finished", timeout=20_000)
        expect(page.locator(".tool")).to_have_count(1)
        expect(page.locator("#chat-status")).to_have_text("Idle")
        expect(page.locator(".thread-button .badge").first).to_have_text("Idle")
    finally:
        assert ui.stop() == 0


def test_usage_shows_the_context_window_and_the_plan_answer(page: Any, store: Path, workdir: Path) -> None:
    ui = start(store, "demo.json")
    try:
        page.goto(ui.url)
        new_thread(page, workdir)
        send(page, "fix it")
        expect(page.locator("#chat-status")).to_have_text("Idle")
        expect(page.locator("#cancel")).to_be_hidden()  # nothing to cancel between turns
        page.click("#usage-button")
        usage = page.locator("#usage")
        expect(usage.locator(".usage-label").first).to_have_text("48,210 of 200,000 tokens (24%)")
        expect(usage).to_contain_text("Cost: $0.0412")
        expect(usage.locator("h3")).to_have_text(["Context", "Plan"])
        expect(usage.locator("p").last).not_to_have_text("")  # the plan windows, or the agent's typed answer
    finally:
        assert ui.stop() == 0
