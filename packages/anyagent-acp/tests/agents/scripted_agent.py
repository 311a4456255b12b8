"""A deterministic ACP agent on the PyPI ``agent-client-protocol`` SDK: no model, prompt keywords.

The recorded tier launches it as a real subprocess (``sys.executable scripted_agent.py``) through
``AgentInstallation.acp(...)``. The first word of the prompt picks the script:

    THINK            a thought chunk, then text
    TOOL             tool_call (pending) → update (in_progress, input) → update (completed, output)
    DUPTOOL          tool_call twice for one id (first without input), then completed
    WRITE <path>     permission request carrying the only sight of the tool (no tool_call before);
                     allow → fs/write_text_file, tool completed; reject → text "rejected", end_turn
    READ <path>      fs/read_text_file; replies with the content (or the error code)
    TERM             a tool running a client terminal (`printf`), output read back, released
    TERMSTREAM       a tool running a client terminal that prints "one", "two", "three" 0.3 s apart;
                     completed after the command exits
    TERMLONG <file>  a client terminal running `sleep 60` (its pid written to <file>), never released
    TERMGROUP <file> a client terminal whose shell (pid written to <file>) waits on a `sleep 60` child
    SLOW             40 chunks 0.05 s apart; honours session/cancel
    DANGLE           a tool left in_progress, then end_turn (the agent never finishes it)
    STUCK            one chunk, then never answers the prompt, whatever the client sends
    DANGLESLOW       a tool left in_progress, then SLOW's chunks (honours session/cancel)
    HOLD             a permission request that stays open until answered or cancelled
    MCPTOOL          three tool calls naming MCP tools as agents do, for the session's first MCP
                     server S: claude-agent-acp's `_meta.claudeCode.toolName` `mcp__S__echo`,
                     codex's `rawInput {server: S, tool: lookup}`, and the bridge's internal
                     `mcp__acp__Write` (a built-in edit, not an MCP call of the session)
    CHOOSE           a permission request that is a choice: allow_once "Red", allow_once "Blue",
                     reject_once "Neither"; replies "picked <optionId>" (or "picked cancelled")
    PLAN / USAGE / COMMANDS / TITLE    one such update, then text
    UNKNOWNREQ       an agent→client request no client knows; replies with the error code
    UNKNOWNUPDATE    a session/update of a kind no schema has, then text
    UNKNOWNNOTE      a vendor notification, then text
    AGENTTURN        ends the turn, then talks again by itself 0.3 s later
    BLOCKS           replies with the types of the prompt's content blocks
    REFUSE / MAXTOK  stop reasons refusal / max_tokens
    SELFSTOP         one chunk, then stop reason cancelled though nobody cancelled
    DENYSTOP         a permission request; rejected → stop reason cancelled (codex-acp 2.x), else end_turn
    FAIL             an error response to the prompt
    (anything else)  "Hello " + "world"

Environment: ``SCRIPTED_VERSION`` (the protocol version to answer), ``SCRIPTED_AUTH=1`` (every
session/new fails -32000), ``SCRIPTED_STORE`` (a directory where sessions persist for load),
``SCRIPTED_RESUME=1`` (advertise ``session/resume``, which replays the whole history before it
answers, with message ids and a tool call per turn, as hermes 0.19.0 does).
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from pathlib import Path
from typing import Any

import anyio
from acp import (
    Agent,
    RequestError,
    run_agent,
    start_tool_call,
    text_block,
    tool_content,
    tool_terminal_ref,
    update_agent_message_text,
    update_agent_thought_text,
    update_plan,
    update_tool_call,
    update_user_message_text,
)
from acp.helpers import plan_entry, update_current_mode
from acp.schema import (
    AgentCapabilities,
    AvailableCommand,
    AvailableCommandsUpdate,
    ConfigOptionUpdate,
    Implementation,
    InitializeResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PermissionOption,
    PromptCapabilities,
    PromptResponse,
    ResumeSessionResponse,
    SessionCapabilities,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionInfoUpdate,
    SessionMode,
    SessionModeState,
    SessionResumeCapabilities,
    SetSessionConfigOptionResponse,
    ToolCallUpdate,
    UsageUpdate,
)

MODES = ("ask", "code", "plan")
RESUME = os.environ.get("SCRIPTED_RESUME") == "1"
EFFORTS = ("low", "high")


class Scripted(Agent):  # type: ignore[misc]
    def __init__(self) -> None:
        self.conn: Any = None
        self.cancelled: dict[str, anyio.Event] = {}
        self.efforts: dict[str, str] = {}
        self.store = Path(os.environ["SCRIPTED_STORE"]) if os.environ.get("SCRIPTED_STORE") else None
        self.mcp: dict[str, list[str]] = {}

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    # -- handshake

    async def initialize(self, protocol_version: int, **_: Any) -> InitializeResponse:
        version = int(os.environ.get("SCRIPTED_VERSION", "1"))
        return InitializeResponse(
            protocol_version=version,
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(image=True, audio=False, embedded_context=False),
                mcp_capabilities=McpCapabilities(http=True, sse=False),
                session_capabilities=SessionCapabilities(resume=SessionResumeCapabilities()) if RESUME else None,
            ),
            agent_info=Implementation(name="scripted", title="Scripted agent", version="9.9.9"),
            auth_methods=[],
        )

    def _state(self, session_id: str) -> tuple[SessionModeState, list[SessionConfigOptionSelect]]:
        modes = SessionModeState(
            current_mode_id="ask", available_modes=[SessionMode(id=m, name=m.title()) for m in MODES]
        )
        return modes, [self._effort_option(session_id)]

    def _effort_option(self, session_id: str) -> SessionConfigOptionSelect:
        return SessionConfigOptionSelect(
            id="effort",
            name="Effort",
            type="select",
            current_value=self.efforts.get(session_id, "low"),
            options=[SessionConfigSelectOption(value=e, name=e.title()) for e in EFFORTS],
        )

    async def new_session(self, cwd: str, mcp_servers: Any = None, **_: Any) -> NewSessionResponse:
        if os.environ.get("SCRIPTED_AUTH") == "1":
            raise RequestError(-32000, "Authentication required", {"hint": "log in first"})
        session_id = "s-" + uuid.uuid4().hex[:8]
        self.cancelled[session_id] = anyio.Event()
        self.mcp[session_id] = [str(getattr(server, "name", "")) for server in mcp_servers or []]
        if self.store is not None:
            servers = [s.model_dump(by_alias=True, exclude_none=True) for s in mcp_servers or []]
            (self.store / f"{session_id}.json").write_text(json.dumps({"history": [], "mcp": servers}))
        modes, options = self._state(session_id)
        return NewSessionResponse(session_id=session_id, modes=modes, config_options=options)

    async def load_session(self, cwd: str, session_id: str, **_: Any) -> LoadSessionResponse:
        path = self.store / f"{session_id}.json" if self.store is not None else None
        if path is None or not path.exists():
            raise RequestError(-32002, "Resource not found", {"sessionId": session_id})
        self.cancelled[session_id] = anyio.Event()
        for user, agent in json.loads(path.read_text())["history"]:
            await self._update(session_id, update_user_message_text(user))
            await self._update(session_id, update_agent_message_text(agent))
        modes, options = self._state(session_id)
        return LoadSessionResponse(modes=modes, config_options=options)

    async def resume_session(self, session_id: str, cwd: str, **_: Any) -> ResumeSessionResponse:
        path = self.store / f"{session_id}.json" if self.store is not None else None
        if path is None or not path.exists():
            raise RequestError(-32002, "Resource not found", {"sessionId": session_id})
        self.cancelled[session_id] = anyio.Event()
        for index, (user, agent) in enumerate(json.loads(path.read_text())["history"]):
            await self._update(session_id, update_user_message_text(user))
            await self._update(session_id, start_tool_call(f"old{index}", "Old tool", kind="read", status="completed"))
            chunk = update_agent_message_text(agent)
            chunk.message_id = f"m{index + 1}"
            await self._update(session_id, chunk)
        modes, options = self._state(session_id)
        return ResumeSessionResponse(modes=modes, config_options=options)

    async def set_session_mode(self, session_id: str, mode_id: str, **_: Any) -> None:
        if mode_id not in MODES:
            raise RequestError(-32602, "Invalid params", {"modeId": mode_id})
        await self._update(session_id, update_current_mode(mode_id))

    async def set_config_option(
        self, config_id: str, session_id: str, value: Any, **_: Any
    ) -> SetSessionConfigOptionResponse:
        if config_id != "effort" or value not in EFFORTS:
            raise RequestError(-32602, "Invalid params", {"configId": config_id})
        self.efforts[session_id] = value
        option = self._effort_option(session_id)
        await self._update(
            session_id, ConfigOptionUpdate(session_update="config_option_update", config_options=[option])
        )
        return SetSessionConfigOptionResponse(config_options=[option])

    async def cancel(self, session_id: str, **_: Any) -> None:
        self.cancelled.setdefault(session_id, anyio.Event()).set()

    # -- helpers

    async def _update(self, session_id: str, update: Any) -> None:
        await self.conn.session_update(session_id=session_id, update=update)

    async def _say(self, session_id: str, *parts: str) -> None:
        for part in parts:
            await self._update(session_id, update_agent_message_text(part))

    async def _ask(self, session_id: str, tool: ToolCallUpdate) -> str:
        response = await self.conn.request_permission(
            session_id=session_id,
            tool_call=tool,
            options=[
                PermissionOption(option_id="yes", name="Allow", kind="allow_once"),
                PermissionOption(option_id="always", name="Always", kind="allow_always"),
                PermissionOption(option_id="no", name="Reject", kind="reject_once"),
            ],
        )
        outcome = response.outcome
        if getattr(outcome, "outcome", None) == "selected":
            return str(outcome.option_id)
        return "cancelled"

    def _remember(self, session_id: str, user: str, agent: str) -> None:
        if self.store is None:
            return
        path = self.store / f"{session_id}.json"
        data = json.loads(path.read_text()) if path.exists() else {"history": []}
        data["history"].append([user, agent])
        path.write_text(json.dumps(data))

    # -- prompts

    async def prompt(self, session_id: str, prompt: list[Any], **_: Any) -> PromptResponse:
        self.cancelled[session_id] = anyio.Event()
        text = " ".join(getattr(block, "text", "") for block in prompt).strip()
        word, _, rest = text.partition(" ")
        handler = getattr(self, f"_do_{word.lower()}", None)
        if handler is None or not word.isupper():
            await self._say(session_id, "Hello ", "world")
            self._remember(session_id, text, "Hello world")
            return PromptResponse(stop_reason="end_turn")
        stop: str = await handler(session_id, rest, prompt)
        return PromptResponse(stop_reason=stop)

    async def _do_think(self, sid: str, rest: str, prompt: Any) -> str:
        await self._update(sid, update_agent_thought_text("pondering"))
        await self._say(sid, "thought done")
        return "end_turn"

    async def _do_tool(self, sid: str, rest: str, prompt: Any) -> str:
        await self._update(sid, start_tool_call("t1", "Run ls", kind="execute", status="pending"))
        await self._update(sid, update_tool_call("t1", status="in_progress", raw_input={"command": "ls -la"}))
        await self._update(
            sid, update_tool_call("t1", status="completed", content=[tool_content(text_block("a.txt\nb.txt"))])
        )
        await self._say(sid, "listed")
        return "end_turn"

    async def _do_mcptool(self, sid: str, rest: str, prompt: Any) -> str:
        server = (self.mcp.get(sid) or ["none"])[0]
        claude = start_tool_call("m1", "echo", kind="other", status="completed", raw_input={"text": "hi"})
        claude.field_meta = {"claudeCode": {"toolName": f"mcp__{server}__echo"}}
        await self._update(sid, claude)
        codex_input = {"server": server, "tool": "lookup", "arguments": {"q": "x"}}
        await self._update(
            sid, start_tool_call("m2", f"Tool: {server}/lookup", status="completed", raw_input=codex_input)
        )
        internal = start_tool_call("m3", "Write a.txt", kind="edit", status="completed", raw_input={"file_path": "/a"})
        internal.field_meta = {"claudeCode": {"toolName": "mcp__acp__Write"}}
        await self._update(sid, internal)
        return "end_turn"

    async def _do_duptool(self, sid: str, rest: str, prompt: Any) -> str:
        await self._update(sid, start_tool_call("d1", "Read", kind="read", raw_input={}))
        await self._update(sid, start_tool_call("d1", "Read a.txt", kind="read", raw_input={"path": "/x/a.txt"}))
        await self._update(sid, update_tool_call("d1", status="completed"))
        return "end_turn"

    async def _do_write(self, sid: str, rest: str, prompt: Any) -> str:
        path = rest.strip()
        tool = ToolCallUpdate(tool_call_id="w1", title=f"Write {path}", kind="edit", raw_input={"path": path})
        choice = await self._ask(sid, tool)
        if choice == "cancelled" or self.cancelled[sid].is_set():
            return "cancelled"
        if choice in ("yes", "always"):
            await self.conn.write_text_file(session_id=sid, path=path, content="written by scripted\n")
            await self._update(sid, update_tool_call("w1", status="completed"))
            await self._say(sid, "allowed")
        else:
            await self._say(sid, "rejected")
        return "end_turn"

    async def _do_read(self, sid: str, rest: str, prompt: Any) -> str:
        try:
            response = await self.conn.read_text_file(session_id=sid, path=rest.strip())
            await self._say(sid, f"content={response.content!r}")
        except RequestError as exc:
            await self._say(sid, f"error={exc.code}")
        return "end_turn"

    async def _do_term(self, sid: str, rest: str, prompt: Any) -> str:
        terminal = await self.conn.create_terminal(session_id=sid, command="printf", args=["term-out"])
        await self._update(
            sid,
            start_tool_call(
                "x1", "printf", kind="execute", status="in_progress", content=[tool_terminal_ref(terminal.terminal_id)]
            ),
        )
        exit_status = await self.conn.wait_for_terminal_exit(session_id=sid, terminal_id=terminal.terminal_id)
        output = await self.conn.terminal_output(session_id=sid, terminal_id=terminal.terminal_id)
        await self._update(sid, update_tool_call("x1", status="completed"))
        await self.conn.release_terminal(session_id=sid, terminal_id=terminal.terminal_id)
        await self._say(sid, f"exit={exit_status.exit_code} out={output.output}")
        return "end_turn"

    async def _do_termstream(self, sid: str, rest: str, prompt: Any) -> str:
        script = "echo one; sleep 0.3; echo two; sleep 0.3; echo three"
        terminal = await self.conn.create_terminal(session_id=sid, command="/bin/sh", args=["-c", script])
        ref = [tool_terminal_ref(terminal.terminal_id)]
        await self._update(sid, start_tool_call("x2", "count", kind="execute", status="in_progress", content=ref))
        await self.conn.wait_for_terminal_exit(session_id=sid, terminal_id=terminal.terminal_id)
        await self._update(sid, update_tool_call("x2", status="completed", content=ref))
        await self.conn.release_terminal(session_id=sid, terminal_id=terminal.terminal_id)
        return "end_turn"

    async def _do_termlong(self, sid: str, rest: str, prompt: Any) -> str:
        script = f"echo $$ > {rest.strip()}; exec sleep 60"
        await self.conn.create_terminal(session_id=sid, command="/bin/sh", args=["-c", script])
        await self._say(sid, "left a terminal running")
        return "end_turn"

    async def _do_termgroup(self, sid: str, rest: str, prompt: Any) -> str:
        script = f"sleep 60 & echo $$ > {rest.strip()}; wait"
        await self.conn.create_terminal(session_id=sid, command="/bin/sh", args=["-c", script])
        await self._say(sid, "left a terminal group running")
        return "end_turn"

    async def _do_slow(self, sid: str, rest: str, prompt: Any) -> str:
        for index in range(40):
            if self.cancelled[sid].is_set():
                return "cancelled"
            await self._say(sid, f"slow{index} ")
            with anyio.move_on_after(0.05):
                await self.cancelled[sid].wait()
        return "end_turn"

    async def _do_stuck(self, sid: str, rest: str, prompt: Any) -> str:
        await self._say(sid, "stuck")
        await anyio.sleep(3600)  # ignores session/cancel and never answers the prompt
        return "end_turn"

    async def _do_dangle(self, sid: str, rest: str, prompt: Any) -> str:
        await self._update(sid, start_tool_call("g1", "Run watch", kind="execute", status="in_progress"))
        await self._say(sid, "left running")
        return "end_turn"

    async def _do_dangleslow(self, sid: str, rest: str, prompt: Any) -> str:
        await self._update(sid, start_tool_call("g2", "Run watch", kind="execute", status="in_progress"))
        return await self._do_slow(sid, rest, prompt)

    async def _do_hold(self, sid: str, rest: str, prompt: Any) -> str:
        tool = ToolCallUpdate(tool_call_id="h1", title="Run rm -rf junk", kind="execute", status="pending")
        choice = await self._ask(sid, tool)
        if choice == "cancelled" or self.cancelled[sid].is_set():
            return "cancelled"
        await self._say(sid, f"chose {choice}")
        return "end_turn"

    async def _do_choose(self, sid: str, rest: str, prompt: Any) -> str:
        tool = ToolCallUpdate(tool_call_id="c1", title="Which colour?", kind="other", status="pending")
        response = await self.conn.request_permission(
            session_id=sid,
            tool_call=tool,
            options=[
                PermissionOption(option_id="red", name="Red", kind="allow_once"),
                PermissionOption(option_id="blue", name="Blue", kind="allow_once"),
                PermissionOption(option_id="neither", name="Neither", kind="reject_once"),
            ],
        )
        outcome = response.outcome
        picked = str(outcome.option_id) if getattr(outcome, "outcome", None) == "selected" else "cancelled"
        await self._say(sid, f"picked {picked}")
        return "end_turn"

    async def _do_plan(self, sid: str, rest: str, prompt: Any) -> str:
        entries = [plan_entry("inspect", status="completed"), plan_entry("fix", status="in_progress")]
        await self._update(sid, update_plan(entries))
        await self._say(sid, "planned")
        return "end_turn"

    async def _do_usage(self, sid: str, rest: str, prompt: Any) -> str:
        await self._update(sid, UsageUpdate(session_update="usage_update", used=1234, size=200000))
        await self._say(sid, "counted")
        return "end_turn"

    async def _do_commands(self, sid: str, rest: str, prompt: Any) -> str:
        commands = [AvailableCommand(name="review", description="Review the diff")]
        await self._update(
            sid, AvailableCommandsUpdate(session_update="available_commands_update", available_commands=commands)
        )
        await self._say(sid, "commands sent")
        return "end_turn"

    async def _do_title(self, sid: str, rest: str, prompt: Any) -> str:
        await self._update(sid, SessionInfoUpdate(session_update="session_info_update", title="A titled session"))
        await self._say(sid, "titled")
        return "end_turn"

    async def _do_unknownreq(self, sid: str, rest: str, prompt: Any) -> str:
        try:
            await self.conn._conn.send_request("vendor/mystery", {"sessionId": sid})
            await self._say(sid, "answered?")
        except RequestError as exc:
            await self._say(sid, f"error={exc.code}")
        return "end_turn"

    async def _do_unknownupdate(self, sid: str, rest: str, prompt: Any) -> str:
        raw = {"sessionId": sid, "update": {"sessionUpdate": "mystery_update", "payload": 42}}
        await self.conn._conn.send_notification("session/update", raw)
        await self._say(sid, "after mystery")
        return "end_turn"

    async def _do_unknownnote(self, sid: str, rest: str, prompt: Any) -> str:
        await self.conn._conn.send_notification("vendor/ping", {"n": 1})
        await self._say(sid, "after ping")
        return "end_turn"

    async def _do_agentturn(self, sid: str, rest: str, prompt: Any) -> str:
        await self._say(sid, "first")

        async def later() -> None:
            await anyio.sleep(0.3)
            await self._say(sid, "by myself")

        self._tg.start_soon(later)
        return "end_turn"

    async def _do_blocks(self, sid: str, rest: str, prompt: Any) -> str:
        kinds = ",".join(getattr(block, "type", "?") for block in prompt)
        texts = " | ".join(getattr(block, "text", "") for block in prompt if getattr(block, "type", "") == "text")
        await self._say(sid, f"blocks={kinds} text={texts}")
        return "end_turn"

    async def _do_refuse(self, sid: str, rest: str, prompt: Any) -> str:
        return "refusal"

    async def _do_maxtok(self, sid: str, rest: str, prompt: Any) -> str:
        await self._say(sid, "partial")
        return "max_tokens"

    async def _do_selfstop(self, sid: str, rest: str, prompt: Any) -> str:
        await self._say(sid, "stopping")
        return "cancelled"

    async def _do_denystop(self, sid: str, rest: str, prompt: Any) -> str:
        tool = ToolCallUpdate(tool_call_id="k1", title="Run touch x", kind="execute", status="pending")
        choice = await self._ask(sid, tool)
        if choice != "yes":
            return "cancelled"
        await self._say(sid, "ran")
        return "end_turn"

    async def _do_fail(self, sid: str, rest: str, prompt: Any) -> str:
        raise RequestError(-32603, "Internal error", {"details": "the model is down"})


async def main() -> None:
    agent = Scripted()
    async with anyio.create_task_group() as tg:
        agent._tg = tg
        await run_agent(agent, use_unstable_protocol=RESUME)
        tg.cancel_scope.cancel()


if __name__ == "__main__":
    sys.exit(anyio.run(main))
