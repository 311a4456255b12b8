"""The fake model over real HTTP: every API shape (streaming and not), keywords, side calls, logs."""

from __future__ import annotations

import json
import signal
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from httpx_sse import aconnect_sse

from anyagent_testkit.fakemodel import ECHO_PREFIX, FakeModel, Reply
from anyagent_testkit.stdio import JsonlProcess, RawLine

pytestmark = pytest.mark.anyio
TIMEOUT = 10.0

CLAUDE_TOOLS = [
    {"name": "Bash", "input_schema": {"type": "object", "properties": {"command": {}, "description": {}}}},
    {"name": "Write", "input_schema": {"type": "object", "properties": {"file_path": {}, "content": {}}}},
]
QWEN_TOOLS = [
    {
        "type": "function",
        "function": {"name": "write_file", "parameters": {"properties": {"file_path": {}, "content": {}}}},
    },
    {"type": "function", "function": {"name": "run_shell_command", "parameters": {"properties": {"command": {}}}}},
]
OPENCODE_TOOLS = [
    {"type": "function", "function": {"name": "write", "parameters": {"properties": {"content": {}, "filePath": {}}}}},
    {
        "type": "function",
        "function": {"name": "bash", "parameters": {"properties": {"command": {}, "description": {}}}},
    },
]
CODEX_TOOLS = [
    {
        "type": "function",
        "name": "exec_command",
        "parameters": {"properties": {"cmd": {}, "sandbox_permissions": {}, "justification": {}, "login": {}}},
    },
    {"type": "function", "name": "write_stdin", "parameters": {"properties": {"chars": {}}}},
]
GEMINI_TOOLS = [
    {
        "functionDeclarations": [
            {"name": "write_file", "parameters": {"type": "OBJECT", "properties": {"file_path": {}, "content": {}}}},
            {"name": "run_shell_command", "parameters": {"type": "OBJECT", "properties": {"command": {}}}},
        ]
    }
]


async def _sse(client: httpx.AsyncClient, url: str, body: dict[str, Any], **kwargs: Any) -> list[tuple[str, Any]]:
    events: list[tuple[str, Any]] = []
    async with aconnect_sse(client, "POST", url, json=body, **kwargs) as source:
        assert source.response.status_code == 200
        async for event in source.aiter_sse():
            events.append((event.event, event.data if event.data == "[DONE]" else json.loads(event.data)))
    return events


def _anthropic(text: Any, *, stream: bool = True, tools: Any = CLAUDE_TOOLS, **extra: Any) -> dict[str, Any]:
    content = text if isinstance(text, list) else [{"type": "text", "text": text}]
    body = {"model": "claude-x", "max_tokens": 4096, "stream": stream, "tools": tools}
    return {**body, "messages": [{"role": "user", "content": content}], **extra}


# -- Anthropic Messages --------------------------------------------------------------------


async def test_anthropic_stream_echoes_plain_text_deterministically() -> None:
    async with FakeModel() as model, httpx.AsyncClient(timeout=TIMEOUT) as client:
        events = await _sse(client, f"{model.url}/v1/messages?beta=true", _anthropic("hello there\nsecond line"))
    kinds = [name for name, _ in events]
    assert kinds[0] == "message_start"
    assert kinds[-2:] == ["message_delta", "message_stop"]
    text = "".join(data["delta"]["text"] for name, data in events if name == "content_block_delta")
    assert text == ECHO_PREFIX + "hello there second line"
    assert events[-2][1]["delta"]["stop_reason"] == "end_turn"


async def test_anthropic_write_calls_claudes_write_tool_then_a_tool_result_ends_the_turn() -> None:
    async with FakeModel() as model, httpx.AsyncClient(timeout=TIMEOUT) as client:
        events = await _sse(client, f"{model.url}/v1/messages", _anthropic("WRITE /tmp/w/hello.txt hi there"))
        start = next(
            data
            for name, data in events
            if name == "content_block_start" and data["content_block"]["type"] == "tool_use"
        )
        assert start["content_block"]["name"] == "Write"
        parts = [
            d["delta"]["partial_json"] for n, d in events if n == "content_block_delta" and d["index"] == start["index"]
        ]
        assert json.loads("".join(parts)) == {"file_path": "/tmp/w/hello.txt", "content": "hi there\n"}
        assert events[-2][1]["delta"]["stop_reason"] == "tool_use"
        tool_id = start["content_block"]["id"]
        follow_up = _anthropic("WRITE /tmp/w/hello.txt hi there", stream=False)
        follow_up["messages"] += [
            {"role": "assistant", "content": [{"type": "tool_use", "id": tool_id, "name": "Write", "input": {}}]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": "File created at x"}],
            },
        ]
        answer = (await client.post(f"{model.url}/v1/messages", json=follow_up)).json()
    assert answer["content"] == [{"type": "text", "text": "The tool finished: File created at x"}]
    assert answer["stop_reason"] == "end_turn"


async def test_claude_shaped_requests_find_the_prompt_among_reminders_and_system_messages() -> None:
    content = [
        {"type": "text", "text": "<system-reminder>\nRUN rm -rf /\n</system-reminder>"},
        {"type": "text", "text": "[Request interrupted by user]\n"},
        {"type": "text", "text": "please\nRUN touch marker.txt"},
    ]
    body = _anthropic(content, stream=False)
    body["messages"].append({"role": "system", "content": "# Environment\nWRITE /etc/passwd no"})
    async with FakeModel() as model, httpx.AsyncClient(timeout=TIMEOUT) as client:
        answer = (await client.post(f"{model.url}/v1/messages", json=body)).json()
    calls = [block for block in answer["content"] if block["type"] == "tool_use"]
    assert calls == [
        {
            "type": "tool_use",
            "id": calls[0]["id"],
            "name": "Bash",
            "input": {"command": "touch marker.txt", "description": calls[0]["input"]["description"]},
        }
    ]


async def test_think_streams_a_thinking_block_before_the_answer() -> None:
    async with FakeModel() as model, httpx.AsyncClient(timeout=TIMEOUT) as client:
        events = await _sse(client, f"{model.url}/v1/messages", _anthropic("THINK"))
    blocks = [data["content_block"]["type"] for name, data in events if name == "content_block_start"]
    assert blocks == ["thinking", "text"]
    deltas = {data["delta"]["type"] for name, data in events if name == "content_block_delta"}
    assert {"thinking_delta", "signature_delta", "text_delta"} <= deltas


async def test_count_tokens_models_head_and_unknown_paths_are_harmless() -> None:
    async with FakeModel() as model, httpx.AsyncClient(base_url=model.url, timeout=TIMEOUT) as client:
        counted = await client.post("/v1/messages/count_tokens?beta=true", json=_anthropic("x" * 400))
        assert counted.json()["input_tokens"] > 100
        models = (await client.get("/v1/models")).json()
        assert {"fake-model", "claude-fake-1"} <= {item["id"] for item in models["data"]}
        assert models["data"][0]["type"] == "model"
        assert models["data"][0]["object"] == "model"
        assert (await client.get("/v1/models/fake-model")).json()["id"] == "fake-model"
        assert (await client.head("/")).status_code == 200
        assert (await client.get("/api/hello")).json() == {}
        assert (await client.post("/api/show", json={"name": "x"})).json() == {}
        gemini = (await client.get("/v1beta/models")).json()
        assert gemini["models"][0]["name"].startswith("models/")


# -- OpenAI Chat Completions ---------------------------------------------------------------


async def test_chat_completions_stream_a_shell_call_for_qwen_with_usage_and_done() -> None:
    body = {
        "model": "fake-model",
        "stream": True,
        "stream_options": {"include_usage": True},
        "tools": QWEN_TOOLS,
        "messages": [
            {"role": "system", "content": "You are Qwen Code"},
            {"role": "user", "content": [{"type": "text", "text": "RUN touch a.txt"}]},
        ],
    }
    async with FakeModel() as model, httpx.AsyncClient(timeout=TIMEOUT) as client:
        events = await _sse(client, f"{model.url}/v1/chat/completions", body)
    assert events[-1][1] == "[DONE]"
    assert events[-2][1]["usage"]["total_tokens"] > 0
    calls = [call for _, data in events[:-2] for call in data["choices"][0]["delta"].get("tool_calls", [])]
    assert calls[0]["function"]["name"] == "run_shell_command"
    assert json.loads("".join(call["function"]["arguments"] for call in calls)) == {"command": "touch a.txt"}
    finish = [data["choices"][0]["finish_reason"] for _, data in events[:-2] if data["choices"][0]["finish_reason"]]
    assert finish == ["tool_calls"]


async def test_chat_completions_write_uses_the_advertised_argument_names() -> None:
    body: dict[str, Any] = {
        "model": "m",
        "tools": OPENCODE_TOOLS,
        "messages": [{"role": "user", "content": "WRITE /w/a.txt A"}],
    }
    async with FakeModel() as model, httpx.AsyncClient(timeout=TIMEOUT) as client:
        answer = (await client.post(f"{model.url}/v1/chat/completions", json=body)).json()
        message = answer["choices"][0]["message"]
        call = message["tool_calls"][0]
        assert call["function"]["name"] == "write"
        assert json.loads(call["function"]["arguments"]) == {"filePath": "/w/a.txt", "content": "A\n"}
        assert answer["choices"][0]["finish_reason"] == "tool_calls"
        body["messages"] += [message, {"role": "tool", "tool_call_id": call["id"], "content": "Wrote file"}]
        body["stream"] = False
        final = (await client.post(f"{model.url}/v1/chat/completions", json=body)).json()
    assert final["choices"][0]["message"]["content"] == "The tool finished: Wrote file"


async def test_chat_completions_think_sends_reasoning_content() -> None:
    body = {"model": "m", "tools": QWEN_TOOLS, "messages": [{"role": "user", "content": "THINK"}]}
    async with FakeModel() as model, httpx.AsyncClient(timeout=TIMEOUT) as client:
        message = (await client.post(f"{model.url}/v1/chat/completions", json=body)).json()["choices"][0]["message"]
    assert message["reasoning_content"].startswith("Let me think")
    assert message["content"]


# -- OpenAI Responses ----------------------------------------------------------------------


async def test_responses_stream_a_codex_exec_command_that_asks_for_escalation() -> None:
    body = {
        "model": "fake-model",
        "stream": True,
        "instructions": "You are a coding agent running in the Codex CLI",
        "tools": CODEX_TOOLS,
        "input": [
            {
                "type": "message",
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "<environment_context>\n<cwd>/w</cwd>\n</environment_context>"}
                ],
            },
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "RUN echo hi > f.txt"}]},
        ],
    }
    async with FakeModel() as model, httpx.AsyncClient(timeout=TIMEOUT) as client:
        events = await _sse(client, f"{model.url}/v1/responses", body)
    assert events[0][0] == "response.created"
    assert events[-1][0] == "response.completed"
    assert events[-1][1]["response"]["usage"]["input_tokens_details"] == {"cached_tokens": 0}
    assert [data["sequence_number"] for _, data in events] == list(range(len(events)))
    done = [data["item"] for name, data in events if name == "response.output_item.done"]
    call = next(item for item in done if item["type"] == "function_call")
    assert call["name"] == "exec_command"
    arguments = json.loads(call["arguments"])
    assert arguments["cmd"] == "echo hi > f.txt"
    assert arguments["sandbox_permissions"] == "require_escalated"
    assert arguments["justification"]


async def test_responses_write_without_a_write_tool_goes_through_apply_patch() -> None:
    body: dict[str, Any] = {
        "model": "m",
        "tools": CODEX_TOOLS,
        "input": [{"type": "message", "role": "user", "content": "WRITE /w/n.txt two words"}],
    }
    async with FakeModel() as model, httpx.AsyncClient(timeout=TIMEOUT) as client:
        answer = (await client.post(f"{model.url}/v1/responses", json=body)).json()
        call = next(item for item in answer["output"] if item["type"] == "function_call")
        command = json.loads(call["arguments"])["cmd"]
        assert command.startswith("apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: /w/n.txt\n+two words\n")
        body["input"] += [call, {"type": "function_call_output", "call_id": call["call_id"], "output": "Success"}]
        final = (await client.post(f"{model.url}/v1/responses", json=body)).json()
    assert final["output"][0]["content"][0]["text"] == "The tool finished: Success"


async def test_a_call_of_a_tool_offered_in_a_namespace_names_the_namespace() -> None:
    """Codex offers its subagent tools inside a ``namespace`` tool and refuses a call without it."""
    spawn = {"type": "function", "name": "spawn_agent", "parameters": {"properties": {"message": {}}}}
    tools = [*CODEX_TOOLS, {"type": "namespace", "name": "multi_agent_v1", "tools": [spawn]}]
    body: dict[str, Any] = {
        "model": "m",
        "tools": tools,
        "input": [{"type": "message", "role": "user", "content": "go"}],
    }
    script = [Reply.tool("spawn_agent", message="child task"), Reply.tool("exec_command", cmd="ls")]
    async with FakeModel(script=script) as model, httpx.AsyncClient(timeout=TIMEOUT) as client:
        first = (await client.post(f"{model.url}/v1/responses", json=body)).json()
        second = (await client.post(f"{model.url}/v1/responses", json=body)).json()
    [call] = [item for item in first["output"] if item["type"] == "function_call"]
    assert (call["namespace"], call["name"]) == ("multi_agent_v1", "spawn_agent")
    assert json.loads(call["arguments"]) == {"message": "child task"}
    [plain] = [item for item in second["output"] if item["type"] == "function_call"]
    assert "namespace" not in plain, "a top-level tool's call names no namespace"


# -- Gemini --------------------------------------------------------------------------------


async def test_gemini_streams_a_write_file_call_with_alt_sse() -> None:
    body = {"contents": [{"role": "user", "parts": [{"text": "WRITE /w/g.txt gem"}]}], "tools": GEMINI_TOOLS}
    url = "/v1beta/models/gemini-3.8-flash:streamGenerateContent?alt=sse"
    async with FakeModel() as model, httpx.AsyncClient(base_url=model.url, timeout=TIMEOUT) as client:
        events = await _sse(client, url, body, headers={"x-goog-api-key": "fake-key"})
    parts = [part for _, data in events for part in data["candidates"][0]["content"]["parts"]]
    calls = [part["functionCall"] for part in parts if "functionCall" in part]
    assert calls == [{"name": "write_file", "args": {"file_path": "/w/g.txt", "content": "gem\n"}}]
    assert events[-1][1]["candidates"][0]["finishReason"] == "STOP"
    assert events[-1][1]["usageMetadata"]["totalTokenCount"] > 0


async def test_gemini_generate_content_count_tokens_and_the_json_array_stream() -> None:
    body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}], "tools": GEMINI_TOOLS}
    async with FakeModel() as model, httpx.AsyncClient(base_url=model.url, timeout=TIMEOUT) as client:
        answer = (await client.post("/v1beta/models/m:generateContent", json=body)).json()
        assert answer["candidates"][0]["content"]["parts"] == [{"text": ECHO_PREFIX + "hi"}]
        assert (await client.post("/v1beta/models/m:countTokens", json=body)).json()["totalTokens"] > 0
        chunks = (await client.post("/v1beta/models/m:streamGenerateContent", json=body)).json()
        assert isinstance(chunks, list)
        assert chunks[-1]["candidates"][0]["finishReason"] == "STOP"


# -- side calls ----------------------------------------------------------------------------


async def test_side_calls_never_call_tools_nor_consume_the_script() -> None:
    router = {
        "contents": [{"role": "user", "parts": [{"text": "WRITE /w/x.txt quoted"}]}],
        "systemInstruction": {"parts": [{"text": "You are a specialized Task Routing AI."}]},
        "generationConfig": {
            "responseMimeType": "application/json",
            "responseJsonSchema": {
                "type": "OBJECT",
                "properties": {"complexity_reasoning": {"type": "STRING"}, "complexity_score": {"type": "INTEGER"}},
            },
        },
    }
    title = _anthropic("RUN rm -rf /", stream=False, system="Generate a concise title for this conversation.")
    no_tools = _anthropic("FAIL 500\nWRITE /w/y.txt", stream=False, tools=[])
    probe = _anthropic("SLOW 100", stream=False, max_tokens=1)
    async with (
        FakeModel(script=[Reply.text("scripted")]) as model,
        httpx.AsyncClient(base_url=model.url, timeout=TIMEOUT) as client,
    ):
        routed = (await client.post("/v1beta/models/flash-lite:generateContent", json=router)).json()
        assert json.loads(routed["candidates"][0]["content"]["parts"][0]["text"]) == {
            "complexity_reasoning": "fake",
            "complexity_score": 1,
        }
        titled = (await client.post("/v1/messages", json=title)).json()
        assert titled["content"] == [{"type": "text", "text": "Fake session title"}]
        started = time.monotonic()
        for body in (no_tools, probe):
            answer = await client.post("/v1/messages", json=body)
            assert answer.status_code == 200
            assert answer.json()["content"] == [{"type": "text", "text": "OK"}]
        assert time.monotonic() - started < 2.0
        assert model.pending == 1
        main = (await client.post("/v1/messages", json=_anthropic("WRITE /w/z.txt", stream=False))).json()
        assert main["content"] == [{"type": "text", "text": "scripted"}]
    reasons = [record.side_call for record in model.requests]
    assert reasons[:4] == [
        "structured output requested",
        "system prompt mentions 'title'",
        "no tools offered",
        "max_tokens 1",
    ]
    assert reasons[4] is None
    assert len(model.model_calls()) == 1


async def test_a_scripted_queue_plays_exact_turns_then_the_keywords_take_over() -> None:
    script = [Reply.tool("Bash", command="ls", description="list"), Reply.thinking("hmm", "done").then(Reply.text("!"))]
    async with FakeModel(script=script) as model, httpx.AsyncClient(base_url=model.url, timeout=TIMEOUT) as client:
        first = (await client.post("/v1/messages", json=_anthropic("anything", stream=False))).json()
        assert first["content"][0] == {
            "type": "tool_use",
            "id": first["content"][0]["id"],
            "name": "Bash",
            "input": {"command": "ls", "description": "list"},
        }
        second = (await client.post("/v1/messages", json=_anthropic("anything", stream=False))).json()
        assert [block["type"] for block in second["content"]] == ["thinking", "text", "text"]
        model.queue(Reply.text("queued later"))
        third = (await client.post("/v1/messages", json=_anthropic("x", stream=False))).json()
        assert third["content"][0]["text"] == "queued later"
        fourth = (await client.post("/v1/messages", json=_anthropic("x", stream=False))).json()
        assert fourth["content"][0]["text"] == ECHO_PREFIX + "x"


async def test_a_responder_answers_by_what_a_request_says_before_the_queue() -> None:
    """A responder's Reply wins over the queue; None lets the queue and then the keywords answer."""

    def responder(conversation: Any) -> Reply | None:
        return Reply.text("for the child") if "CHILD" in conversation.user_text else None

    async with (
        FakeModel(script=[Reply.text("queued")], responder=responder) as model,
        httpx.AsyncClient(base_url=model.url, timeout=TIMEOUT) as client,
    ):
        child = (await client.post("/v1/messages", json=_anthropic("CHILD task", stream=False))).json()
        parent = (await client.post("/v1/messages", json=_anthropic("parent", stream=False))).json()
        later = (await client.post("/v1/messages", json=_anthropic("later", stream=False))).json()
        assert model.pending == 0
    assert child["content"][0]["text"] == "for the child"
    assert parent["content"][0]["text"] == "queued", "the responder's None left the queue its turn"
    assert later["content"][0]["text"] == ECHO_PREFIX + "later"


# -- failures, pacing, logging ---------------------------------------------------------------


FAILURES = [
    (
        "/v1/messages",
        _anthropic("FAIL 401", stream=True),
        401,
        {"type": "error", "error": {"type": "authentication_error", "message": "fake model failure 401"}},
    ),
    (
        "/v1/chat/completions",
        {"tools": QWEN_TOOLS, "messages": [{"role": "user", "content": "FAIL 500"}]},
        500,
        {"error": {"message": "fake model failure 500", "type": "server_error", "param": None, "code": None}},
    ),
    (
        "/v1beta/models/m:generateContent",
        {"tools": GEMINI_TOOLS, "contents": [{"parts": [{"text": "FAIL 401"}]}]},
        401,
        {"error": {"code": 401, "message": "fake model failure 401", "status": "UNAUTHENTICATED"}},
    ),
]


@pytest.mark.parametrize(("path", "body", "status", "expected"), FAILURES)
async def test_fail_answers_with_the_apis_error_shape(
    path: str, body: dict[str, Any], status: int, expected: dict[str, Any]
) -> None:
    async with FakeModel() as model, httpx.AsyncClient(base_url=model.url, timeout=TIMEOUT) as client:
        answer = await client.post(path, json=body)
    assert answer.status_code == status
    assert answer.json() == expected
    assert model.requests[0].outcome == "error"


async def test_a_bad_key_gets_401() -> None:
    async with FakeModel() as model, httpx.AsyncClient(base_url=model.url, timeout=TIMEOUT) as client:
        answer = await client.post("/v1/messages", json=_anthropic("hi"), headers={"x-api-key": "sk-bad-key"})
        assert answer.status_code == 401
        assert answer.json()["error"]["type"] == "authentication_error"
        ok = await client.post("/v1/messages", json=_anthropic("hi", stream=False), headers={"x-api-key": "sk-good"})
        assert ok.status_code == 200


async def test_slow_streams_chunks_at_the_configured_pace() -> None:
    async with FakeModel(slow_delay=0.1) as model, httpx.AsyncClient(timeout=TIMEOUT) as client:
        started = time.monotonic()
        events = await _sse(client, f"{model.url}/v1/messages", _anthropic("SLOW 5"))
        elapsed = time.monotonic() - started
    pieces = [data["delta"]["text"] for name, data in events if name == "content_block_delta"]
    assert pieces == [f"slow{index} " for index in range(5)]
    assert 0.45 <= elapsed < 3.0


async def test_a_client_that_leaves_mid_stream_is_logged_and_the_server_keeps_serving() -> None:
    async with FakeModel(slow_delay=0.05) as model, httpx.AsyncClient(timeout=TIMEOUT) as client:
        async with aconnect_sse(client, "POST", f"{model.url}/v1/messages", json=_anthropic("SLOW 200")) as source:
            async for event in source.aiter_sse():
                if event.event == "content_block_delta":
                    break
        with anyio.fail_after(TIMEOUT):
            while model.requests[0].outcome != "disconnected":
                await anyio.sleep(0.05)
        again = await client.post(f"{model.url}/v1/messages", json=_anthropic("hi", stream=False))
        assert again.status_code == 200


async def test_every_request_is_logged_as_jsonl_with_secrets_redacted(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "requests.jsonl"
    async with FakeModel(log=log) as model, httpx.AsyncClient(base_url=model.url, timeout=TIMEOUT) as client:
        headers = {"x-api-key": "sk-secret-value-123", "anthropic-version": "2023-06-01"}
        await client.post("/v1/messages?beta=true", json=_anthropic("WRITE /w/l.txt x", stream=False), headers=headers)
        await client.get("/v1/models")
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(r["method"], r["path"]) for r in records] == [("POST", "/v1/messages"), ("GET", "/v1/models")]
    first = records[0]
    assert first["query"] == "beta=true"
    assert first["dialect"] == "anthropic-messages"
    assert first["headers"]["anthropic-version"] == "2023-06-01"
    assert "sk-secret-value-123" not in json.dumps(first)
    assert first["headers"]["x-api-key"].startswith("<redacted 19 chars")
    assert first["body"]["messages"][0]["content"][0]["text"] == "WRITE /w/l.txt x"
    assert first["reply"]["tools"][0]["name"] == "Write"
    assert first["reply"]["tools"][0]["arguments"] == {"file_path": "/w/l.txt", "content": "x\n"}
    assert records[1]["dialect"] is None


async def test_the_command_line_server_writes_its_port_and_logs(tmp_path: Path) -> None:
    port_file, log = tmp_path / "port.txt", tmp_path / "log.jsonl"
    argv: list[str | Path] = [
        sys.executable,
        "-m",
        "anyagent_testkit.fakemodel",
        "--port",
        "0",
        "--port-file",
        port_file,
        "--log",
        log,
    ]
    async with JsonlProcess.open(argv) as server:
        banner = await server.receive(TIMEOUT)
        assert isinstance(banner, RawLine)
        port = int(port_file.read_text())
        assert banner.text == f"fake model listening on http://127.0.0.1:{port}"
        async with httpx.AsyncClient(timeout=TIMEOUT) as client:
            body = {"tools": QWEN_TOOLS, "messages": [{"role": "user", "content": "hello"}]}
            answer = await client.post(f"http://127.0.0.1:{port}/v1/chat/completions", json=body)
            assert answer.json()["choices"][0]["message"]["content"] == ECHO_PREFIX + "hello"
        server.send_signal(signal.SIGTERM)
        assert await server.wait(TIMEOUT) == 0
    assert json.loads(log.read_text().splitlines()[0])["path"] == "/v1/chat/completions"


def test_the_fake_model_works_without_an_event_loop() -> None:
    with FakeModel() as model:
        answer = httpx.post(f"{model.url}/v1/messages", json=_anthropic("sync", stream=False), timeout=TIMEOUT)
        assert answer.json()["content"][0]["text"] == ECHO_PREFIX + "sync"
        assert model.wait_for_calls(1, timeout=1)[0].reply == {"text": ECHO_PREFIX + "sync"}
    with pytest.raises(httpx.ConnectError):
        httpx.post(f"{model.url}/v1/messages", json={}, timeout=1)
