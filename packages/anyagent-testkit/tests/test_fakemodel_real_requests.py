"""The fake model's request reading, checked against real request bodies the agent CLIs sent to the
live-tier research fake (claude, claude ACP bridges, codex, codex-acp, gemini, qwen, opencode).
Skipped when the research captures are absent."""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from anyagent_testkit.fakemodel import Dialect, ToolCall, ToolIntent, conversation_from, resolve_tool

RESEARCH = Path(os.environ.get("ANYAGENT_LIVE_RESEARCH", "/work/shared/research/live-tier"))
pytestmark = pytest.mark.skipif(not RESEARCH.is_dir(), reason=f"{RESEARCH} does not exist")


def _dialect(path: str) -> Dialect | None:
    path = path.split("?")[0]
    if path.endswith("/messages"):
        return Dialect.ANTHROPIC
    if path.endswith("/chat/completions"):
        return Dialect.OPENAI_CHAT
    if path.endswith("/responses"):
        return Dialect.OPENAI_RESPONSES
    if ":streamGenerateContent" in path or ":generateContent" in path:
        return Dialect.GEMINI
    return None


def _requests() -> Iterator[tuple[str, Dialect, dict[str, Any]]]:
    files = sorted(RESEARCH.glob("acp/recordings/*.llm.jsonl.gz"))
    files += sorted(RESEARCH.glob("codex-opencode/recordings/*/*/fake_model_requests.jsonl"))
    for file in files:
        opener = gzip.open if file.suffix == ".gz" else open
        with opener(file, "rt", encoding="utf-8") as handle:
            for line in handle:
                record = json.loads(line)
                dialect = _dialect(str(record.get("path") or ""))
                if dialect is not None and isinstance(record.get("body"), dict):
                    yield file.name, dialect, record["body"]


def _is_prompt(text: str) -> bool:
    return any(line.startswith(("FAKE_", "RUN_", "Say hello", "timing")) for line in text.splitlines())


def test_agent_turn_requests_are_main_calls_and_their_prompt_is_found() -> None:
    seen: dict[Dialect, int] = {}
    for name, dialect, body in _requests():
        conversation = conversation_from(dialect, body)
        if conversation.tool_result_newest or not _is_prompt(conversation.user_text):
            continue
        if conversation.structured_schema is not None or conversation.wants_json:
            continue  # the router / title calls quote the prompt: covered below
        assert conversation.side_call is None, (name, conversation.side_call)
        assert conversation.tools, name
        seen[dialect] = seen.get(dialect, 0) + 1
    assert set(seen) == set(Dialect), seen


def test_router_and_title_calls_are_side_calls() -> None:
    side = [
        (name, conversation_from(dialect, body).side_call)
        for name, dialect, body in _requests()
        if "Routing AI" in json.dumps(body)[:3000] or "generate a very short title" in json.dumps(body)
    ]
    assert side, "expected gemini router and codex-acp title requests in the captures"
    assert all(reason is not None for _, reason in side), side


def test_a_write_intent_resolves_to_a_tool_each_agent_really_offers() -> None:
    resolved: dict[str, str] = {}
    for name, dialect, body in _requests():
        conversation = conversation_from(dialect, body)
        if conversation.side_call is not None:
            continue
        offered = {tool.name for tool in conversation.tools}
        tool, arguments = resolve_tool(
            ToolCall(intent=ToolIntent.WRITE, arguments={"path": "/w/x.txt", "content": "x\n"}), conversation.tools
        )
        assert tool in offered, (name, tool, sorted(offered))
        assert "/w/x.txt" in json.dumps(arguments)
        resolved[name.split(".")[0]] = tool
    assert resolved.get("qwen15") == "write_file"
    assert resolved.get("gemini") == "write_file"
    assert resolved.get("claude") == "mcp__acp__Write"
    assert resolved.get("claude-agent049") == "Write"
    assert resolved.get("codex") == "exec_command"
