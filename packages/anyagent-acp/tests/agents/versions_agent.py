"""A raw JSON-lines ACP agent (stdlib only) that speaks the protocol versions it is told to.

``versions_agent.py VERSIONS`` — VERSIONS is a comma list (``1``, ``2``, ``1,2``, ``3``). An
``initialize`` asking a version it speaks is answered with that version; any other is refused
with -32022 listing the versions it speaks in ``data.supportedVersions``, and the connection
stays uninitialized, so the client may send ``initialize`` again (what an agent built on the
ACP SDK for v2 only does). In v2 it speaks v2's shapes: role-agnostic ``info``/``capabilities``,
a ``session/prompt`` answered ``{}`` at once with the turn ending in an idle ``state_update``,
``tool_call_update`` as the only tool upsert, ``tool_call_content_chunk``, ``plan_update``, and
permission requests with a ``title`` and a ``subject``. ``VERSIONS_LOG`` names a file where each
method the client sent is appended (``initialize <version>`` for an initialize).

Prompts (first word): ``perm`` asks a permission first; ``term`` runs a tool that shows a display
terminal (``terminal_update``, ``terminal_output_chunk``); ``wait`` streams one chunk and waits for
``session/cancel``; ``diff`` runs edit tools whose content is v2's structured diffs; ``upsert``
sends whole-message upserts that extend, repeat, rewrite and clear messages; ``plans`` sends two
plans and one of an unknown type; ``toolperm`` asks a permission about a tool already shown, with a
description, then cancels that tool; ``nulls`` patches a tool with nulls (cleared) and a new
content array (replacing); ``background`` answers, then starts work of its own (``running``, a
message, ``idle``); ``batch`` writes its turn as one JSON-RPC batch line; ``cmdterm`` asks a permission
for a command whose output goes to a display terminal, then streams it; anything else answers
"Hello v<version>" with a tool and a plan. ``media`` sends messages holding resource links, an
image, audio and an embedded resource (v1 and v2). v1 only: ``echo`` sends our prompt back as user
message chunks (its text split in two, its other blocks between), then says it again after the
answer's text; ``near`` sends a user message that starts like our prompt and goes on otherwise;
``replay`` answers, then sends a user message with the prompt's text and a message of its own.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

SPEAKS = [int(v) for v in (sys.argv[1] if len(sys.argv) > 1 else "1").split(",")]
SESSION = "ver-1"
state: dict[str, Any] = {"version": None, "next": 500, "waiting": None}


def send(frame: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(frame) + "\n")
    sys.stdout.flush()


def log(entry: str) -> None:
    path = os.environ.get("VERSIONS_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(entry + "\n")


def update(body: dict[str, Any]) -> None:
    send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": SESSION, "update": body}})


def chunk(text: str, message_id: str) -> None:
    body: dict[str, Any] = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}
    if state["version"] == 2:
        body["messageId"] = message_id
    update(body)


def initialize(rid: Any, params: dict[str, Any]) -> None:
    asked = params.get("protocolVersion")
    log(f"initialize {asked}")
    if asked not in SPEAKS:
        error = {"code": -32022, "message": "Unsupported protocol version", "data": {"supportedVersions": SPEAKS}}
        send({"jsonrpc": "2.0", "id": rid, "error": error})
        return
    state["version"] = asked
    if asked == 2:
        assert "info" in params and "capabilities" in params, params  # v2's role-agnostic fields
        assert "clientCapabilities" not in params, params
        result: dict[str, Any] = {
            "protocolVersion": 2,
            "info": {"name": "versions-agent", "title": "Versions", "version": "2.0.0"},
            "capabilities": {"session": {"prompt": {"image": {}}, "mcp": {"stdio": {}, "http": {}}}},
            "authMethods": [],
        }
    else:
        result = {
            "protocolVersion": 1,
            "agentInfo": {"name": "versions-agent", "version": "1.0.0"},
            "agentCapabilities": {"loadSession": False, "promptCapabilities": {"image": True}},
            "authMethods": [],
        }
    send({"jsonrpc": "2.0", "id": rid, "result": result})


PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
"""A 1x1 PNG, 70 bytes, base64."""
LINK = {"type": "resource_link", "uri": "file:///w/notes.md", "name": "notes.md"}
TITLED = {"type": "resource_link", "uri": "file:///w/my docs/a (1).md", "name": "a.md", "title": "The [draft]"}
IMAGE = {"type": "image", "mimeType": "image/png", "data": PNG}
AUDIO = {"type": "audio", "mimeType": "audio/wav", "data": "UklGRg=="}
EMBEDDED = {"type": "resource", "resource": {"uri": "file:///w/a.txt", "mimeType": "text/plain", "text": "hello"}}


def block(kind: str, content: dict[str, Any], message_id: str) -> None:
    body: dict[str, Any] = {"sessionUpdate": kind, "content": content}
    if state["version"] == 2:
        body["messageId"] = message_id
    update(body)


def media() -> None:
    """Messages holding non-text blocks: an agent message with text, two resource links, an
    image; a thought with audio; a user message with an embedded resource; in v2 also a whole
    agent message holding a link and an image, upserted three times (repeated, then extended)."""
    block("agent_message_chunk", {"type": "text", "text": "See "}, "a1")
    block("agent_message_chunk", LINK, "a1")
    block("agent_message_chunk", {"type": "text", "text": " and "}, "a1")
    block("agent_message_chunk", TITLED, "a1")
    block("agent_message_chunk", IMAGE, "a1")
    block("agent_message_chunk", {"type": "text", "text": "."}, "a1")
    block("agent_thought_chunk", AUDIO, "r1")
    block("user_message_chunk", EMBEDDED, "u9")
    if state["version"] == 2:
        whole_blocks = [{"type": "text", "text": "Read "}, LINK, IMAGE]
        for extra in ([], [], [{"type": "text", "text": "!"}]):
            update({"sessionUpdate": "agent_message", "messageId": "a2", "content": whole_blocks + extra})


def turn_v1(rid: Any, text: str, prompt: list[Any]) -> None:
    if text.startswith("media"):
        media()
        send({"jsonrpc": "2.0", "id": rid, "result": {"stopReason": "end_turn"}})
        return
    if text.startswith("echo"):  # our prompt back, in two chunks, as hermes sends it (in one)
        block("user_message_chunk", {"type": "text", "text": text[:6]}, "u1")
        for item in prompt:
            if item.get("type") != "text":
                block("user_message_chunk", item, "u1")
        block("user_message_chunk", {"type": "text", "text": text[6:]}, "u1")
        chunk("Hello v1", "m1")
        block("user_message_chunk", {"type": "text", "text": text}, "u2")  # said again: no echo now
        send({"jsonrpc": "2.0", "id": rid, "result": {"stopReason": "end_turn"}})
        return
    if text.startswith("near"):  # a user message that starts like our prompt, then is another
        block("user_message_chunk", {"type": "text", "text": "near"}, "u1")
        block("user_message_chunk", {"type": "text", "text": "ly there"}, "u1")
        chunk("Hello v1", "m1")
        send({"jsonrpc": "2.0", "id": rid, "result": {"stopReason": "end_turn"}})
        return
    if text.startswith("replay"):  # after the turn: a user message saying an earlier prompt
        send({"jsonrpc": "2.0", "id": rid, "result": {"stopReason": "end_turn"}})
        block("user_message_chunk", {"type": "text", "text": text}, "u1")
        chunk("replayed", "m1")
        return
    chunk("Hello v1", "m1")
    update({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Read a", "kind": "read", "status": "pending"})
    update({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"})
    update({"sessionUpdate": "plan", "entries": [{"content": "step", "priority": "high", "status": "pending"}]})
    send({"jsonrpc": "2.0", "id": rid, "result": {"stopReason": "end_turn"}})


def turn_v2(rid: Any, text: str, prompt: list[Any]) -> None:
    send({"jsonrpc": "2.0", "id": rid, "result": {}})  # acceptance only
    update({"sessionUpdate": "user_message", "messageId": "u1", "content": prompt})
    update({"sessionUpdate": "state_update", "state": "running"})
    if text.startswith("media"):
        media()
        update({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"})
        return
    if text.startswith("perm"):
        state["next"] += 1
        params = {
            "sessionId": SESSION,
            "title": "Run ls?",
            "subject": {"type": "command", "command": "ls", "cwd": "/", "toolCallId": "t9"},
            "options": [
                {"optionId": "yes", "name": "Allow once", "kind": "allow_once"},
                {"optionId": "no", "name": "Deny", "kind": "reject_once"},
            ],
        }
        send({"jsonrpc": "2.0", "id": state["next"], "method": "session/request_permission", "params": params})
        update({"sessionUpdate": "state_update", "state": "requires_action"})
        return
    if text.startswith("term"):
        terminal(rid)
        return
    if text.startswith("diff"):
        diffs()
        return
    if text.startswith("upsert"):
        upserts()
        return
    if text.startswith("plans"):
        plans()
        return
    if text.startswith("toolperm"):
        update({"sessionUpdate": "tool_call_update", "toolCallId": "t5", "title": "Run setup.sh", "kind": "execute",
                "status": "pending"})  # fmt: skip
        state["next"] += 1
        params = {
            "sessionId": SESSION,
            "title": "Run this script?",
            "description": "It changes your project.",
            "subject": {"type": "tool_call", "toolCall": {"toolCallId": "t5", "status": "pending"}},
            "options": [
                {"optionId": "yes", "name": "Allow once", "kind": "allow_once"},
                {"optionId": "no", "name": "Deny", "kind": "reject_once"},
            ],
        }
        state["after_reply"] = "toolperm"
        send({"jsonrpc": "2.0", "id": state["next"], "method": "session/request_permission", "params": params})
        update({"sessionUpdate": "state_update", "state": "requires_action"})
        return
    if text.startswith("background"):
        finish_v2()
        update({"sessionUpdate": "state_update", "state": "running"})
        chunk("later", "b1")
        update({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"})
        return
    if text.startswith("cmdterm"):
        state["next"] += 1
        subject = {"type": "command", "command": "make", "cwd": "/w", "toolCallId": "t7", "terminalId": "term7"}
        params = {
            "sessionId": SESSION,
            "title": "Run make?",
            "subject": subject,
            "options": [{"optionId": "yes", "name": "Allow once", "kind": "allow_once"}],
        }
        state["after_reply"] = "cmdterm"
        send({"jsonrpc": "2.0", "id": state["next"], "method": "session/request_permission", "params": params})
        return
    if text.startswith("batch"):

        def note(body: dict[str, Any]) -> dict[str, Any]:
            return {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": SESSION, "update": body}}

        text_chunk = {"type": "text", "text": "batched"}
        sys.stdout.write(json.dumps([
            note({"sessionUpdate": "agent_message_chunk", "messageId": "a9", "content": text_chunk}),
            note({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}),
        ]) + "\n")  # fmt: skip
        sys.stdout.flush()
        return
    if text.startswith("nulls"):
        said = {"type": "content", "content": {"type": "text", "text": "partial"}}
        update({"sessionUpdate": "tool_call_update", "toolCallId": "t6", "title": "Grep", "kind": "search",
                "status": "in_progress", "rawInput": {"pattern": "x"}, "locations": [{"path": "/w/a"}],
                "content": [said]})  # fmt: skip
        update({"sessionUpdate": "tool_call_update", "toolCallId": "t6", "title": None, "rawInput": None,
                "locations": None, "content": None})  # fmt: skip
        terminal_ref = {"type": "terminal", "terminalId": "nope"}
        update({"sessionUpdate": "tool_call_update", "toolCallId": "t6", "content": [terminal_ref]})
        update({"sessionUpdate": "tool_call_update", "toolCallId": "t6", "status": "completed"})
        update({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"})
        return
    if text.startswith("wait"):
        chunk("working", "a1")
        state["waiting"] = True
        return
    finish_v2()


def terminal(rid: Any) -> None:
    """A tool showing an agent-owned display terminal: its output in two base64 chunks that split
    a UTF-8 character, then its exit."""
    import base64

    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode()

    update({"sessionUpdate": "tool_call_update", "toolCallId": "t2", "title": "Run echo", "kind": "execute",
            "status": "in_progress", "content": [{"type": "terminal", "terminalId": "term1"}]})  # fmt: skip
    update({"sessionUpdate": "terminal_update", "terminalId": "term1", "command": "echo", "cwd": "/"})
    data = "h\u00e9llo\nworld\n".encode()
    update({"sessionUpdate": "terminal_output_chunk", "terminalId": "term1", "data": b64(data[:2])})
    update({"sessionUpdate": "terminal_output_chunk", "terminalId": "term1", "data": b64(data[2:])})
    update({"sessionUpdate": "terminal_update", "terminalId": "term1", "exitStatus": {"exitCode": 0}})
    update({"sessionUpdate": "tool_call_update", "toolCallId": "t2", "status": "completed"})
    update({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"})


PATCH = (
    "diff --git /w/src/a.py /w/src/a.py\n"
    "--- /w/src/a.py\n"
    "+++ /w/src/a.py\n"
    "@@ -1,3 +1,3 @@\n"
    " one\n"
    "-two\n"
    "+TWO\n"
    " three\n"
    "@@ -10,2 +10,3 @@\n"
    " ten\n"
    " eleven\n"
    "+twelve\n"
    "diff --git /w/new.txt /w/new.txt\n"
    "new file mode 100644\n"
    "--- /dev/null\n"
    "+++ /w/new.txt\n"
    "@@ -0,0 +1,2 @@\n"
    "+hello\n"
    "+world\n"
    "\\ No newline at end of file\n"
    "diff --git /w/old.txt /w/old.txt\n"
    "deleted file mode 100644\n"
    "--- /w/old.txt\n"
    "+++ /dev/null\n"
    "@@ -1 +0,0 @@\n"
    "-bye\n"
)


def diffs() -> None:
    """Two edit tools with v2 diffs: one in its ``tool_call_update`` (a modify of two hunks, an
    add, a delete, and a move the patch does not cover), one streamed as a content chunk (a
    binary change with no patch)."""
    changes = [
        {"operation": "modify", "path": "/w/src/a.py", "fileType": "text", "mimeType": "text/x-python"},
        {"operation": "add", "path": "/w/new.txt", "fileType": "text"},
        {"operation": "delete", "path": "/w/old.txt", "fileType": "text"},
        {"operation": "move", "oldPath": "/w/from.txt", "path": "/w/to.txt"},
    ]
    diff = {"type": "diff", "changes": changes, "patch": {"format": "git_patch", "text": PATCH}}
    update({"sessionUpdate": "tool_call_update", "toolCallId": "e1", "title": "Edit files", "kind": "edit",
            "status": "in_progress", "content": [diff]})  # fmt: skip
    update({"sessionUpdate": "tool_call_update", "toolCallId": "e1", "status": "completed"})
    update({"sessionUpdate": "tool_call_update", "toolCallId": "e2", "title": "Edit logo", "kind": "edit"})
    binary = {"type": "diff", "changes": [{"operation": "modify", "path": "/w/logo.png", "fileType": "binary"}]}
    update({"sessionUpdate": "tool_call_content_chunk", "toolCallId": "e2", "content": binary})
    update({"sessionUpdate": "tool_call_update", "toolCallId": "e2", "status": "completed"})
    update({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"})


def whole(kind: str, message_id: str, text: str | None) -> None:
    body: dict[str, Any] = {"sessionUpdate": kind, "messageId": message_id}
    body["content"] = None if text is None else [{"type": "text", "text": text}]
    update(body)


def upserts() -> None:
    """Whole-message upserts over chunks: a1 streams "Hel" "lo", an upsert extends it to
    "Hello world" and one repeats that; the thought r1 comes whole; a tool ends a1, and an upsert
    extends it again ("!"); a2 streams "Draft" and an upsert rewrites it to "Final answer", which
    a chunk extends; a3 says "gone" and is cleared; u2 is a user message that is not our prompt."""
    chunk("Hel", "a1")
    chunk("lo", "a1")
    whole("agent_message", "a1", "Hello world")
    whole("agent_message", "a1", "Hello world")
    update({"sessionUpdate": "agent_message", "messageId": "a1", "_meta": {"x": 1}})  # content omitted
    whole("agent_thought", "r1", "thinking")
    update({"sessionUpdate": "tool_call_update", "toolCallId": "t3", "title": "Look", "kind": "read",
            "status": "completed"})  # fmt: skip
    whole("agent_message", "a1", "Hello world!")
    chunk("Draft", "a2")
    whole("agent_message", "a2", "Final answer")
    chunk(".", "a2")
    whole("agent_message", "a3", "gone")
    whole("agent_message", "a3", None)
    whole("user_message", "u2", "from the parent")
    update({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"})


def plans() -> None:
    """Two plans by planId (the second updated later) and one of a type stable v2 does not define."""

    def plan(plan_id: str, *contents: str) -> None:
        entries = [{"content": c, "priority": "medium", "status": "pending"} for c in contents]
        update({"sessionUpdate": "plan_update", "plan": {"type": "items", "planId": plan_id, "entries": entries}})

    plan("p1", "a", "b")
    plan("p2", "c")
    update({"sessionUpdate": "plan_update", "plan": {"type": "markdown", "planId": "p3", "text": "# plan"}})
    plan("p2", "c", "d")
    update({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"})


def finish_v2(outcome: str | None = None) -> None:
    said = "Hello v2" if outcome is None else f"permission {outcome}"
    chunk(said[:5], "a1")
    chunk(said[5:], "a1")
    update({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "title": "Read a", "kind": "read"})
    update({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "in_progress"})
    content = {"type": "content", "content": {"type": "text", "text": "line one"}}
    update({"sessionUpdate": "tool_call_content_chunk", "toolCallId": "t1", "content": content})
    update({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"})
    entries = [{"content": "step", "priority": "high", "status": "pending"}]
    update({"sessionUpdate": "plan_update", "plan": {"type": "items", "planId": "p1", "entries": entries}})
    update({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"})


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        frame = json.loads(line)
        method = frame.get("method")
        rid = frame.get("id")
        params = frame.get("params") or {}
        if method is None:  # an answer to our permission request
            log(f"reply {json.dumps(frame.get('result'))}")
            outcome = (frame.get("result") or {}).get("outcome", {})
            after = state.pop("after_reply", None)
            if after == "cmdterm":
                import base64

                update({"sessionUpdate": "tool_call_update", "toolCallId": "t7", "status": "in_progress"})
                data = base64.b64encode(b"built\n").decode()
                update({"sessionUpdate": "terminal_output_chunk", "terminalId": "term7", "data": data})
                update({"sessionUpdate": "tool_call_update", "toolCallId": "t7", "status": "completed"})
                update({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"})
                continue
            if after == "toolperm":
                update({"sessionUpdate": "tool_call_update", "toolCallId": "t5", "status": "cancelled"})
                update({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"})
                continue
            finish_v2(outcome.get("optionId") or outcome.get("outcome"))
            continue
        if method != "initialize":
            log(method)
        if method == "initialize":
            initialize(rid, params)
        elif state["version"] is None:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32600, "message": "not initialized"}})
        elif method == "session/new":
            if state["version"] == 2:
                for server in params.get("mcpServers") or []:
                    assert "type" in server, server  # v2: every MCP server config is typed
            send({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": SESSION}})
        elif method in ("auth/login", "authenticate") or (method == "session/resume" and state["version"] == 2):
            send({"jsonrpc": "2.0", "id": rid, "result": {}})
        elif method == "session/prompt":
            prompt = params.get("prompt") or []
            text = " ".join(b.get("text", "") for b in prompt if b.get("type") == "text")
            (turn_v2 if state["version"] == 2 else turn_v1)(rid, text, prompt)
        elif method == "session/cancel":
            if state["waiting"]:
                state["waiting"] = None
                update({"sessionUpdate": "state_update", "state": "idle", "stopReason": "cancelled"})
        elif rid is not None:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"no {method}"}})


if __name__ == "__main__":
    main()
