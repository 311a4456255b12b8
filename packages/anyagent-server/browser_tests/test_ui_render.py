"""``anyagent ui`` in chromium: subagent output under its tool card, compact and rollback, plan usage per
agent, the Markdown renderer (tables, nested lists, images, highlighting; hostile input), keyboard, narrow
window and dark mode."""

from __future__ import annotations

import json
import re
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from conftest import start
from playwright.sync_api import expect
from test_ui_mock import new_thread, send


def test_subagent_output_nests_under_its_tool_card(page: Any, store: Path, workdir: Path) -> None:
    ui = start(store, "subagent.json")
    try:
        page.goto(ui.url)
        new_thread(page, workdir)
        send(page, "where are the parsers?")
        expect(page.locator("#chat-status")).to_have_text("Idle")
        card = page.locator(".tool[data-tool=task1]")
        expect(card).to_have_class(re.compile(r"\bsubagent\b"))
        expect(card.locator("> summary .tool-status")).to_have_text("done")
        nested = card.locator("> .tool-nested")
        expect(nested.locator(".message.agent")).to_have_text(["Searching src/ for parsers.", "Found 2 modules."])
        expect(nested.locator(".message.agent strong")).to_have_text("src/")
        expect(nested.locator(".tool[data-tool=c-grep] .tool-title")).to_have_text("grep -rl parse src")
        # the parent's own text stays outside the card, in order around it; the child's end did not end the turn
        turn = page.locator("section.turn")
        expect(turn).to_have_count(1)
        top = turn.locator("> .message.agent")
        expect(top).to_have_text(
            ["I'll ask a subagent to look around.", "The parsers are in src/parse.py and src/lex.py."]
        )
        order = turn.evaluate("t => [...t.children].map(c => c.dataset.tool || c.className)")
        assert order == ["message user", "message agent", "task1", "message agent"], order
        # keyboard: the card's summary toggles it
        summary = card.locator("> summary")
        summary.focus()
        expect(nested).to_be_visible()
        page.keyboard.press("Enter")
        expect(nested).to_be_hidden()
        page.keyboard.press("Space")
        expect(nested).to_be_visible()
    finally:
        assert ui.stop() == 0


def test_no_compact_or_rollback_buttons_without_the_capabilities(page: Any, store: Path, workdir: Path) -> None:
    ui = start(store, "chat.json")
    try:
        page.goto(ui.url)
        new_thread(page, workdir)
        expect(page.locator("#settings-button")).to_be_visible()
        expect(page.locator("#compact")).to_be_hidden()
        expect(page.locator("#rollback")).to_be_hidden()
    finally:
        assert ui.stop() == 0


def test_compact_marks_the_transcript_and_rollback_marks_the_rewound_turns(
    page: Any, store: Path, workdir: Path
) -> None:
    ui = start(store, "rollback.json")
    try:
        page.goto(ui.url)
        new_thread(page, workdir)
        compact, rollback = page.locator("#compact"), page.locator("#rollback")
        expect(compact).to_be_visible()
        expect(rollback).to_be_visible()
        expect(rollback).to_be_disabled()  # nothing to rewind yet
        send(page, "one")
        expect(page.locator(".message.agent").last).to_have_text("first answer")
        expect(page.locator("#chat-status")).to_have_text("Idle")
        send(page, "two")
        expect(page.locator(".message.agent").last).to_have_text("second answer")
        expect(page.locator("#chat-status")).to_have_text("Idle")
        expect(rollback).to_be_enabled()

        compact.click()
        note = page.locator(".note.compacted")
        expect(note).to_have_count(1)
        expect(note).to_contain_text("Context compacted")
        expect(page.locator("#chat-status")).to_have_text("Idle")
        expect(page.locator("section.turn.agent-turn .note.compacted")).to_have_count(1)

        rollback.focus()
        page.keyboard.press("Enter")  # keyboard: the buttons are real buttons
        rolled = page.locator("section.turn.rolled-back")
        expect(rolled).to_have_count(1)
        expect(rolled.locator(".message.user")).to_have_text("two")
        expect(rolled.locator(".message.agent")).to_have_text("second answer")
        expect(rolled.locator(".rolled-back-note")).to_contain_text("Rolled back")
        expect(page.locator("#chat-title")).to_have_text("rolled back 1")  # the SessionUpdated that confirmed it
        kept = page.locator("section.turn:not(.rolled-back):not(.agent-turn)")
        expect(kept.locator(".message.agent")).to_have_text("first answer")

        rollback.click()
        expect(rolled).to_have_count(2)
        expect(rollback).to_be_disabled()  # every prompt turn is rewound; the compaction is not a prompt turn
        send(page, "three")
        expect(page.locator(".message.agent").last).to_have_text("third answer")
        expect(page.locator("section.turn:not(.rolled-back) .message.user")).to_have_text(["three"])
    finally:
        assert ui.stop() == 0


def _stamp(when: float) -> dict[str, int]:
    return {"secs_since_epoch": int(when), "nanos_since_epoch": 0}


def _iso(when: float) -> str:
    return datetime.fromtimestamp(int(when), tz=timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def test_plan_usage_per_agent_as_a_chart_with_windows_and_resets(
    page: Any, store: Path, workdir: Path, tmp_path: Path
) -> None:
    now = time.time()
    five_h, week = now + 2 * 3600 + 5 * 60, now + 3 * 86400 + 600
    script = tmp_path / "plan.json"
    plan = {
        "plan": "Max 5x",
        "windows": [
            {"label": "5 hours", "used_percent": 42.5, "resets_at": _stamp(five_h)},
            {"label": "week", "used_percent": 91.2, "resets_at": _stamp(week)},
            {"label": "week (opus)", "used_percent": 3, "resets_at": None},
        ],
    }
    script.write_text(json.dumps({"plan_usage": plan, "turns": []}), encoding="utf-8")
    ui = start(store, str(script))
    try:
        page.goto(ui.url)
        expect(page.locator("#plan-button")).to_be_visible()
        page.evaluate("() => document.activeElement && document.activeElement.blur()")
        page.keyboard.press("u")  # keyboard: u opens usage from anywhere but a text field
        dialog = page.locator("#usage-dialog")
        expect(dialog).to_be_visible()
        expect(dialog.locator("#usage")).to_contain_text("Open a thread to see its context window.")
        card = dialog.locator(".plan-card[data-agent=mock]")
        expect(card.locator(".plan-name")).to_have_text("Max 5x")
        expect(card.locator(".plan-label")).to_have_text(["5 hours", "week", "week (opus)"])
        expect(card.locator("[role=meter]")).to_have_count(3)
        meters = card.locator("[role=meter]")
        assert [meters.nth(i).get_attribute("aria-valuenow") for i in range(3)] == ["43", "91", "3"]
        expect(card.locator(".plan-percent")).to_have_text(["43%", "91%", "3%"])
        widths = card.locator(".usage-fill").evaluate_all("fs => fs.map(f => f.style.width)")
        assert widths == ["42.5%", "91.2%", "3%"], widths
        expect(card.locator(".usage-fill").nth(1)).to_have_class(re.compile(r"\bhigh\b"))
        resets = card.locator(".plan-reset")
        expect(resets.nth(0)).to_contain_text(re.compile(r"resets in 2 h 0[45] min"))
        expect(resets.nth(1)).to_contain_text("resets in 3 days")
        expect(resets.nth(2)).to_have_text("no reset time")
        assert resets.nth(0).get_attribute("data-resets-at") == _iso(five_h)
        assert resets.nth(1).get_attribute("data-resets-at") == _iso(week)
        # narrow and dark: the chart stays inside the dialog and the dialog inside the window
        page.emulate_media(color_scheme="dark")
        page.set_viewport_size({"width": 360, "height": 740})
        box = dialog.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 360, box
        tracks = card.locator(".usage-track").evaluate_all("ts => ts.map(t => t.getBoundingClientRect().width)")
        assert all(w >= 80 for w in tracks), tracks
        assert dialog.evaluate("d => d.scrollWidth <= d.clientWidth")
        fill = card.locator(".usage-fill").first.evaluate("f => getComputedStyle(f).backgroundColor")
        assert fill == "rgb(117, 150, 255)", fill  # the dark palette's accent
        page.keyboard.press("Escape")
        expect(dialog).to_be_hidden()
        page.emulate_media(color_scheme="light")
        page.set_viewport_size({"width": 1200, "height": 800})

        # the same card from a thread's usage, below its context gauge
        new_thread(page, workdir)
        page.click("#usage-button")
        expect(dialog.locator("#usage h3")).to_have_text(["Context", "Plan"])
        expect(dialog.locator(".plan-card[data-agent=mock] .plan-label")).to_have_count(3)
    finally:
        assert ui.stop() == 0


def test_an_agent_without_plan_usage_says_so(page: Any, store: Path, workdir: Path) -> None:
    ui = start(store, "chat.json")
    try:
        page.goto(ui.url)
        new_thread(page, workdir)
        page.click("#usage-button")
        card = page.locator("#usage-dialog .plan-card[data-agent=mock]")
        expect(card.locator(".plan-none")).to_have_text(
            re.compile(r"^No plan usage: this mock agent reports no plan usage")
        )
        expect(card.locator("[role=meter]")).to_have_count(0)
        expect(page.locator("#usage")).to_contain_text("No usage reported yet.")
    finally:
        assert ui.stop() == 0


def test_markdown_tables_nested_lists_images_and_code(page: Any, store: Path, workdir: Path) -> None:
    ui = start(store, "markdown.json")
    try:
        page.goto(ui.url)
        new_thread(page, workdir)
        send(page, "report")
        expect(page.locator("#chat-status")).to_have_text("Idle")
        msg = page.locator(".message.agent").last
        expect(msg.locator("h2")).to_have_text("Results")
        table = msg.locator(".table-wrap > table")
        expect(table.locator("thead th")).to_have_text(["Test", "Time (ms)", "Status"])
        expect(table.locator("tbody tr")).to_have_count(2)
        expect(table.locator("tbody tr").first.locator("td code")).to_have_text("test_parse")
        aligns = table.locator("thead th").evaluate_all("ths => ths.map(t => getComputedStyle(t).textAlign)")
        assert aligns == ["left", "right", "center"], aligns
        expect(msg.locator("> ul > li > ul > li > ul > li")).to_have_text("tokens")
        expect(msg.locator("> ul > li > ul > li")).to_have_count(2)
        expect(msg.locator("> ol > li")).to_have_count(2)
        expect(msg.locator("> ol > li").first.locator("> ul > li")).to_have_text("nested bullet")
        img = msg.locator("img")
        expect(img).to_have_attribute("alt", "chart")
        page.wait_for_function("() => document.querySelector('.message.agent img').naturalWidth === 1")
        code = msg.locator("pre.code[data-lang=rust] code")
        expect(code.locator(".kw")).to_have_text(["fn", "let"])
        expect(code.locator(".nu")).to_have_text("42")
        expect(code.locator(".cm")).to_have_text("// the answer")
        expect(code.locator(".st")).to_have_text('"{n}"')

        # narrow window: the page does not scroll sideways; the wide table scrolls in its own box
        page.set_viewport_size({"width": 380, "height": 760})
        wrap = msg.locator(".table-wrap")
        assert page.evaluate("() => document.documentElement.scrollWidth") <= 380
        assert wrap.evaluate("w => w.scrollWidth > w.clientWidth")
        # dark mode: the table header and code take the dark palette
        page.emulate_media(color_scheme="light")
        light = table.locator("th").first.evaluate("t => getComputedStyle(t).backgroundColor")
        page.emulate_media(color_scheme="dark")
        dark = table.locator("th").first.evaluate("t => getComputedStyle(t).backgroundColor")
        assert (light, dark) == ("rgb(246, 247, 249)", "rgb(29, 32, 39)")
        assert code.locator(".kw").first.evaluate("k => getComputedStyle(k).color") == "rgb(210, 168, 255)"
    finally:
        assert ui.stop() == 0


HOSTILE = [
    "<script>window.pwned = 1</script>",
    '<img src=x onerror="window.pwned = 2">',
    "[click](javascript:window.pwned=3)",
    "[click](JAVASCRIPT:window.pwned=3)",
    "![x](javascript:window.pwned=4)",
    "![x](data:text/html;base64,PHNjcmlwdD53aW5kb3cucHduZWQ9NTwvc2NyaXB0Pg==)",
    "![x](data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9IndpbmRvdy5wd25lZD02Ij48L3N2Zz4=)",
    '[x](https://ok.example/"onmouseover="window.pwned=7)',
    '![x"onerror="window.pwned=8](https://ok.example/a.png)',
    "| a | b |\n|---|---|\n| <svg onload=window.pwned=9> | <b>bold</b> |",
    "- <iframe src=javascript:window.pwned=10>\n  - <a href=javascript:x>x</a>",
    '```"><script>window.pwned=11</script>\n</code></pre><img src=x onerror=window.pwned=12>\n```',
    "`</code><script>window.pwned=13</script>`",
    "**<u onclick=window.pwned=14>x</u>**",
    "> <style>body{display:none}</style>",
    "text \u00000\u0000 and \u00001\u0000 `code`",
    "[a](https://ok.example/x) ![b](https://ok.example/b.png)",
]

ALLOWED_TAGS = {
    "P", "H1", "H2", "H3", "H4", "H5", "H6", "UL", "OL", "LI", "STRONG", "EM", "DEL", "CODE", "PRE", "SPAN",
    "A", "IMG", "BLOCKQUOTE", "HR", "DIV", "TABLE", "THEAD", "TBODY", "TR", "TH", "TD",
}  # fmt: skip
ALLOWED_ATTRS = {"href", "target", "rel", "src", "alt", "loading", "referrerpolicy", "class", "data-lang", "start"}


def test_the_renderer_on_hostile_input_in_the_browser(page: Any, store: Path) -> None:
    ui = start(store, "chat.json")
    try:
        page.goto(ui.url)
        found = page.evaluate(
            """async (inputs) => {
                const { render } = await import("/static/markdown.js");
                const box = document.createElement("div");
                box.className = "message";
                document.body.append(box);
                const out = [];
                for (const input of inputs) {
                    const node = document.createElement("div");
                    node.innerHTML = render(input);
                    box.append(node);
                    out.push({ html: node.innerHTML, text: node.textContent,
                               elements: [...node.querySelectorAll("*")].map((e) => ({
                                   tag: e.tagName, attrs: [...e.attributes].map((a) => [a.name, a.value]) })) });
                }
                await new Promise((r) => setTimeout(r, 500));
                const over = new MouseEvent("mouseover", { bubbles: true });
                for (const a of box.querySelectorAll("a")) a.dispatchEvent(over);
                return { out, pwned: window.pwned ?? null };
            }""",
            HOSTILE,
        )
        assert found["pwned"] is None
        for source, got in zip(HOSTILE, found["out"], strict=True):
            for element in got["elements"]:
                assert element["tag"] in ALLOWED_TAGS, (source, got["html"])
                for name, value in element["attrs"]:
                    assert name in ALLOWED_ATTRS, (source, got["html"])
                    if name in ("href", "src"):
                        assert re.match(r"^(https://ok\.example/|data:image/(png|gif|jpeg|webp);)", value), (
                            source,
                            value,
                        )
                    if name == "class":
                        assert re.fullmatch(r"kw|st|cm|nu|code|table-wrap|align-(left|right|center)", value), (
                            source,
                            value,
                        )
        by_source = dict(zip(HOSTILE, found["out"], strict=True))
        assert by_source[HOSTILE[0]]["text"] == "<script>window.pwned = 1</script>"  # shown, not run
        assert "<b>bold</b>" in by_source[HOSTILE[9]]["text"]
        assert by_source[HOSTILE[15]]["text"] == "text 0 and 1 code"
        links = by_source[HOSTILE[16]]["elements"]
        assert [e["tag"] for e in links] == ["P", "A", "IMG"]
        assert dict(links[1]["attrs"])["rel"] == "noopener noreferrer"
        assert dict(links[2]["attrs"])["referrerpolicy"] == "no-referrer"
    finally:
        assert ui.stop() == 0


@pytest.mark.parametrize("reload", [False, True], ids=["live", "after-a-reload"])
def test_a_steered_prompt_shows_inside_the_running_turn(page: Any, store: Path, workdir: Path, reload: bool) -> None:
    """After a reload the turn comes back from the sidecar's replay, which holds no prompt: the page
    places the steered one after the event it followed (before: it was missing)."""
    ui = start(store, "steer.json")
    try:
        page.goto(ui.url)
        new_thread(page, workdir)
        send(page, "build it")
        expect(page.locator(".message.agent").first).to_have_text("working on it")
        send(page, "use release mode")
        expect(page.locator("#delivery")).to_have_text("Steered into the running turn")
        if reload:
            page.reload()
        expect(page.locator("#chat-status")).to_have_text("Idle")
        turn = page.locator("section.turn")
        expect(turn).to_have_count(1)
        expect(turn.locator(".message")).to_have_count(4)
        order = turn.evaluate("t => [...t.children].map(c => `${c.className}: ${c.textContent}`)")
        assert order == [
            "message user: build it",
            "message agent: working on it",
            "message user: use release mode",
            "message agent: done, with your note",
        ], order
    finally:
        assert ui.stop() == 0
