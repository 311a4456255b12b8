"""`anyagent threads`, `show`, `export` and `resume`, run as a person would (a subprocess, a fresh HOME)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from storesupport import chatty_script, record_turns

from anyagent import Runtime, serialize
from anyagent_store import Store


def _anyagent(*args: str, home: Path, stdin: str = "", store: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home), "NO_COLOR": "1", "XDG_DATA_HOME": str(home / ".local/share")}
    env.pop("ANYAGENT_STORE", None)
    if store is not None:
        env["ANYAGENT_STORE"] = str(store)
    return subprocess.run(
        [sys.executable, "-m", "anyagent.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=home,
    )


def _recorded(path: Path) -> list[str]:
    async def go() -> list[str]:
        async with Store.sqlite(path) as store, Runtime.with_mock(chatty_script(turns=2)) as runtime:
            first = await record_turns(store, runtime, ["plan the migration", "write it"])
            second = await record_turns(store, runtime, ["review the diff"])
            return [first.thread.id, second.thread.id]

    return anyio.run(go)


def test_threads_on_a_fresh_install_says_there_are_none_and_where(tmp_path: Path) -> None:
    result = _anyagent("threads", home=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "no threads in" in result.stdout
    assert str(tmp_path / ".local/share/anyagent/threads.db") in result.stdout


def test_threads_lists_newest_first_as_a_table(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    first, second = _recorded(path)
    result = _anyagent("threads", "--store", str(path), home=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["THREAD", "AGENT", "STATUS", "UPDATED", "EVENTS", "TITLE"]
    assert lines[1].startswith(second[:8]) and lines[1].endswith("review the diff")
    assert lines[2].startswith(first[:8]) and "idle" in lines[2]
    as_json = _anyagent("threads", "--json", "--search", "migration", home=tmp_path, store=path)
    assert [json.loads(line)["id"] for line in as_json.stdout.splitlines()] == [first]


def test_show_renders_the_transcript_like_chat(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    first, _ = _recorded(path)
    result = _anyagent("show", first[:8], "--store", str(path), home=tmp_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.splitlines()[0].startswith("plan the migration")
    assert "> plan the migration" in out and "> write it" in out
    assert "answer 1 \n✓ read file 1 (execute, completed)\ndone." in out
    assert "— turn done" in out


def test_show_of_an_unknown_thread_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    _recorded(path)
    result = _anyagent("show", "nothing-like-it", "--store", str(path), home=tmp_path)
    assert result.returncode == 5
    assert "ThreadNotFound" in result.stdout


def test_export_jsonl_and_markdown(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    first, _ = _recorded(path)
    jsonl = _anyagent("export", first, "--store", str(path), home=tmp_path)
    assert jsonl.returncode == 0, jsonl.stderr
    events = [serialize.loads(line) for line in jsonl.stdout.splitlines()]
    assert len(events) > 10
    target = tmp_path / "out.md"
    md = _anyagent("export", first, "--format", "md", "-o", str(target), "--store", str(path), home=tmp_path)
    assert md.returncode == 0, md.stderr
    assert target.read_text().startswith("# plan the migration")


def test_a_corrupt_store_is_named_not_reset(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    path.write_text("not a database")
    result = _anyagent("threads", "--store", str(path), home=tmp_path)
    assert result.returncode == 5
    assert "StoreCorrupt" in result.stdout and str(path) in result.stdout
    assert path.read_text() == "not a database"


@pytest.mark.skipif(sys.platform == "win32", reason="piped chat")
def test_resume_shows_the_history_then_chats_and_records_on(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    first, _ = _recorded(path)
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            {
                "capabilities": ["resume"],
                "turns": [
                    {
                        "steps": [
                            {"emit": {"type": "TextDelta", "message_id": "r1", "text": "resumed reply"}},
                            {"end": {"type": "Completed", "source": "protocol"}},
                        ]
                    }
                ],
            }
        )
    )
    result = _anyagent(
        "--mock", str(script), "resume", first, "--plain", "--store", str(path), home=tmp_path, stdin="and then?\n"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert out.index("> plan the migration") < out.index("answer 2") < out.index("resumed reply")

    async def stored() -> list[str]:
        async with Store.sqlite(path) as store:
            return [s.raw for s in await store.history(first)]

    raws = anyio.run(stored)
    assert any('"text":"and then?"' in raw for raw in raws)  # the prompt typed in the chat is stored
    assert any('"text":"resumed reply"' in raw for raw in raws)
