"""The JSON Schema (draft 7) of every line in and out of ``anyagent serve``: ``anyagent serve --schema``.

Built from the same names the codec uses: every enum's values come from anyagent's enums (through
``wire.camel``), the command list from ``hub.COMMANDS``. The roots follow anyagent-rs's
``schema.json`` (``Frame`` for a command, ``Line`` for any output line, ``Event``, ``EventKind``,
``ErrorBody``, …) so the same generators (json-schema-to-typescript, datamodel-codegen, quicktype)
apply; ``packages/anyagent-server/schema.json`` is the committed copy, checked by the tests.
"""

from __future__ import annotations

import json
from typing import Any

from anyagent import (
    Capability,
    CompletionSource,
    DiagnosticLevel,
    InstallationSource,
    PermissionChoice,
    PlanEntryStatus,
    RollbackScope,
    SessionStatus,
    ToolKind,
    ToolStatus,
)

from .hub import COMMANDS
from .wire import camel

__all__ = ["ROOTS", "schema", "schema_text"]

ROOTS = (
    "Frame",
    "Line",
    "Event",
    "EventKind",
    "ErrorBody",
    "DiscoveryReport",
    "AgentDetails",
    "PlanUsage",
    "SessionInfo",
    "Delivery",
)
"""The wire types a client names; each validates as ``#/definitions/<Name>``."""

S = dict[str, Any]


def _ref(name: str) -> S:
    return {"$ref": f"#/definitions/{name}"}


def _null(schema: S) -> S:
    return {"anyOf": [schema, {"type": "null"}]}


def _str() -> S:
    return {"type": "string"}


def _opt_str() -> S:
    return {"type": ["string", "null"]}


def _uint() -> S:
    return {"type": "integer", "minimum": 0}


def _arr(items: S) -> S:
    return {"type": "array", "items": items}


def _obj(props: S, required: tuple[str, ...] = (), *, closed: bool = False) -> S:
    out: S = {"type": "object", "properties": props, "required": list(required)}
    if closed:
        out["additionalProperties"] = False
    return out


def _tagged(name: str, body: S) -> S:
    return _obj({name: body}, (name,), closed=True)


def _units(*names: str) -> S:
    return {"type": "string", "enum": list(names)}


def _enum(enum_type: Any) -> S:
    return _units(*(camel(str(m.value)) for m in enum_type))


def _text_pair(*names: str) -> S:
    return _obj({n: _str() for n in names}, names)


def _definitions() -> S:
    tool_kinds = [camel(str(k.value)) for k in ToolKind]
    d: S = {}
    d["Frame"] = _frame()
    d["AgentRef"] = {"anyOf": [_str(), _obj({"acp": _ref("AcpSpec")}, ("acp",))]}
    d["AcpSpec"] = _obj({"name": _str(), "path": _str(), "args": _arr(_str())}, ("name", "path"))
    d["PermissionMode"] = _units("Ask", "AutoApprove")
    d["McpServer"] = _obj({"name": _str(), "connection": _ref("McpConnection")}, ("name", "connection"))
    headers = {"type": "object", "additionalProperties": _str()}
    d["McpConnection"] = {
        "oneOf": [
            _tagged("Stdio", _obj({"command": _str(), "args": _arr(_str()), "env": headers}, ("command",))),
            _tagged("Http", _obj({"url": _str(), "headers": headers}, ("url",))),
            _tagged("Sse", _obj({"url": _str(), "headers": headers}, ("url",))),
        ]
    }
    d["ConfigValue"] = {"anyOf": [_str(), {"type": "boolean"}]}
    d["Answer"] = {
        "oneOf": [
            _tagged("Permission", _ref("PermissionChoice")),
            _tagged("Question", _arr(_ref("QuestionAnswer"))),
        ]
    }
    d["PermissionChoice"] = _enum(PermissionChoice)
    d["QuestionAnswer"] = {"oneOf": [_tagged("Choices", _arr(_str())), _tagged("Text", _str())]}
    d["RollbackScope"] = _enum(RollbackScope)
    d["Line"] = _line()
    d["Hello"] = _obj(
        {"protocol": {"type": "integer", "const": 1}, "anyagent": _str(), "server": _str()}, ("protocol", "anyagent")
    )
    d["SystemTime"] = _obj(
        {"secs_since_epoch": _uint(), "nanos_since_epoch": _uint()}, ("secs_since_epoch", "nanos_since_epoch")
    )
    d["Event"] = _obj(
        {
            "sequence": _uint(),
            "occurred_at": _ref("SystemTime"),
            "session_id": _str(),
            "turn_info": _null(_ref("TurnContext")),
            "kind": _ref("EventKind"),
            "extensions": {"type": "object"},
        },
        ("sequence", "session_id", "kind", "extensions"),
    )
    d["TurnContext"] = _obj({"id": _str(), "parent_tool_id": _opt_str()}, ("id",))
    d["EventKind"] = {
        "oneOf": [
            _tagged("TurnStarted", _obj({"origin": _ref("TurnOrigin")}, ("origin",))),
            _tagged("TextDelta", _text_pair("message_id", "text")),
            _tagged("ReasoningDelta", _text_pair("message_id", "text")),
            _tagged("UserMessage", _text_pair("message_id", "text")),
            _tagged("MessageEnded", _text_pair("message_id")),
            _tagged("ToolUpdated", _ref("ToolUpdate")),
            _tagged("ToolOutputDelta", _text_pair("tool_id", "text")),
            _tagged("PlanUpdated", _obj({"entries": _arr(_ref("PlanEntry"))}, ("entries",))),
            _tagged("RequestOpened", _ref("Request")),
            _tagged("RequestClosed", _text_pair("request_id")),
            _tagged("SessionUpdated", _ref("SessionInfo")),
            _tagged("StatusChanged", _ref("SessionStatus")),
            _tagged(
                "ContextUsage",
                _obj(
                    {"used_tokens": _uint(), "window_tokens": _null(_uint()), "cost_usd": {"type": ["number", "null"]}},
                    ("used_tokens",),
                ),
            ),
            {"type": "string", "const": "ContextCompacted"},
            _tagged("PlanUsageUpdated", _ref("PlanUsage")),
            _tagged("Diagnostic", _ref("Diagnostic")),
            _tagged(
                "TurnEnded", _obj({"stop": _ref("StopReason"), "background": _arr(_str())}, ("stop", "background"))
            ),
        ]
    }
    d["TurnOrigin"] = {"oneOf": [_units("Agent"), _tagged("Prompt", _str())]}
    d["ToolUpdate"] = _obj(
        {
            "id": _str(),
            "kind": _ref("ToolKind"),
            "title": _str(),
            "status": _ref("ToolStatus"),
            "input": _ref("ToolInput"),
            "output": _opt_str(),
            "diffs": _arr(_ref("FileDiff")),
            "locations": _arr(_str()),
            "raw": _null(_ref("RawTool")),
            "line_locations": _arr(_obj({"path": _str(), "line": _null(_uint())}, ("path",))),
        },
        ("id", "kind", "title", "status", "input", "diffs", "locations"),
    )
    d["ToolKind"] = {
        "oneOf": [
            _units(*tool_kinds),
            _tagged("Mcp", _text_pair("server", "tool")),
        ]
    }
    d["ToolStatus"] = _enum(ToolStatus)
    d["ToolInput"] = {
        "oneOf": [
            _units("None"),
            _tagged("Path", _str()),
            _tagged("Command", _obj({"command": _str(), "cwd": _opt_str()}, ("command",))),
            _tagged("Pattern", _str()),
            _tagged("Url", _str()),
            _tagged("Query", _str()),
            _tagged("Text", _str()),
        ]
    }
    d["FileDiff"] = _obj({"path": _str(), "old_text": _opt_str(), "new_text": _str()}, ("path", "new_text"))
    d["RawTool"] = _obj({"name": _str(), "input": {}}, ("name", "input"))
    d["PlanEntry"] = _obj({"text": _str(), "status": _ref("PlanStatus"), "priority": _str()}, ("text", "status"))
    d["PlanStatus"] = _enum(PlanEntryStatus)
    d["Request"] = {
        "oneOf": [_tagged("Permission", _ref("PermissionRequest")), _tagged("Question", _ref("QuestionRequest"))]
    }
    d["PermissionRequest"] = _obj(
        {"id": _str(), "tool": _ref("ToolUpdate"), "options": _arr(_ref("PermissionChoice")), "detail": _opt_str()},
        ("id", "tool", "options"),
    )
    d["QuestionRequest"] = _obj({"id": _str(), "questions": _arr(_ref("Question"))}, ("id", "questions"))
    d["Question"] = _obj(
        {
            "id": _str(),
            "text": _str(),
            "header": _opt_str(),
            "choices": _arr(_ref("Choice")),
            "multi_select": {"type": "boolean"},
            "allows_free_text": {"type": "boolean"},
        },
        ("id", "text", "choices", "multi_select", "allows_free_text"),
    )
    d["Choice"] = _obj({"id": _str(), "label": _str(), "description": _opt_str()}, ("id", "label"))
    d["SessionInfo"] = _obj(
        {
            "id": _str(),
            "agent": _ref("AgentInstallation"),
            "details": _ref("AgentDetails"),
            "configuration": _ref("SessionConfiguration"),
            "resume_token": _opt_str(),
            "title": _opt_str(),
            "status": _ref("SessionStatus"),
        },
        ("id", "agent", "details", "configuration"),
    )
    d["AgentInstallation"] = _obj(
        {
            "id": _str(),
            "name": _str(),
            "executable_path": _str(),
            "source": _ref("InstallationSource"),
            "upgrade": _null(_ref("MissingAgent")),
            "acp_args": {"type": ["array", "null"], "items": _str()},
            "wire": _opt_str(),
            "version": _opt_str(),
        },
        ("id", "name", "executable_path", "source"),
    )
    d["InstallationSource"] = _enum(InstallationSource)
    d["MissingAgent"] = _obj(
        {"id": _str(), "name": _str(), "searched": _arr(_str()), "install_hint": _str()},
        ("id", "name", "searched", "install_hint"),
    )
    d["AgentDetails"] = _obj(
        {
            "version": _opt_str(),
            "auth": _ref("AuthStatus"),
            "capabilities": _ref("Capabilities"),
            "config_options": _arr(_ref("ConfigOption")),
            "commands": _arr(_ref("SlashCommand")),
        },
        ("auth", "capabilities", "config_options", "commands"),
    )
    d["AuthStatus"] = {
        "oneOf": [
            _units("Unknown"),
            _tagged(
                "Authenticated", _obj({"kind": _ref("AuthKind"), "account": _null(_ref("AccountInfo"))}, ("kind",))
            ),
            _tagged("Unauthenticated", _obj({"login": _arr(_ref("LoginMethod"))}, ("login",))),
        ]
    }
    d["AuthKind"] = {"oneOf": [_units("Subscription", "ApiKey", "CloudProvider"), _tagged("Other", _str())]}
    d["AccountInfo"] = _obj({"email": _opt_str(), "plan": _opt_str()})
    d["LoginMethod"] = {
        "oneOf": [
            _tagged(
                "Terminal",
                _obj(
                    {
                        "command": _arr(_str()),
                        "env": {"type": "object", "additionalProperties": _str()},
                        "description": _str(),
                    },
                    ("command", "env", "description"),
                ),
            ),
            _tagged("EnvVar", _obj({"name": _str(), "description": _str()}, ("name",))),
        ]
    }
    d["Capabilities"] = _obj(
        {"features": {**_arr(_ref("Capability")), "uniqueItems": True}, "mcp_transports": _arr(_ref("McpTransport"))},
        ("features", "mcp_transports"),
    )
    d["Capability"] = _enum(Capability)
    d["McpTransport"] = _units("Stdio", "Http", "Sse")
    d["ConfigOption"] = _obj(
        {
            "id": _str(),
            "name": _str(),
            "category": _opt_str(),
            "kind": _ref("ConfigKind"),
            "current": _null(_ref("ConfigValue")),
            "live": {"type": "boolean"},
            "between_turns": {"type": "boolean"},
        },
        ("id", "name", "kind", "live"),
    )
    d["ConfigKind"] = {
        "oneOf": [_units("Boolean"), _tagged("Select", _obj({"choices": _arr(_ref("ConfigChoice"))}, ("choices",)))]
    }
    d["ConfigChoice"] = _obj(
        {"value": _str(), "label": _str(), "description": _opt_str(), "aliases": _arr(_str())}, ("value", "label")
    )
    d["SlashCommand"] = _obj({"name": _str(), "description": _str(), "input_hint": _opt_str()}, ("name", "description"))
    d["SessionConfiguration"] = _obj(
        {"options": {"type": "object", "additionalProperties": _ref("ConfigValue")}}, ("options",)
    )
    d["SessionStatus"] = _enum(SessionStatus)
    d["PlanUsage"] = _obj(
        {"plan": _opt_str(), "windows": _arr(_ref("UsageWindow")), "fetched_at": _ref("SystemTime")},
        ("windows", "fetched_at"),
    )
    d["UsageWindow"] = _obj(
        {
            "label": _str(),
            "used_percent": {"type": "integer", "minimum": 0, "maximum": 255},
            "resets_at": _null(_ref("SystemTime")),
            "used_percent_exact": {"type": "number"},
        },
        ("label", "used_percent"),
    )
    d["Diagnostic"] = _obj(
        {"level": _ref("DiagnosticLevel"), "message": _str(), "code": _opt_str(), "raw": {}}, ("level", "message")
    )
    d["DiagnosticLevel"] = _enum(DiagnosticLevel)
    d["StopReason"] = {
        "oneOf": [
            _units("Cancelled", "Refused"),
            _tagged("Completed", _obj({"source": _ref("CompletionSource")}, ("source",))),
            _tagged("Failed", _obj({"message": _str()}, ("message",))),
        ]
    }
    d["CompletionSource"] = _enum(CompletionSource)
    d["ErrorBody"] = {
        **_obj(
            {
                "kind": _str(),
                "message": _str(),
                "detail": _str(),
                "agent": _str(),
                "login": _arr(_ref("LoginMethod")),
                "status": _str(),
                "stderr": _str(),
                "session": _str(),
            },
            ("kind", "message"),
        ),
        "additionalProperties": True,
    }
    d["DiscoveryReport"] = _obj(
        {
            "agents": _arr(_ref("AgentInstallation")),
            "missing": _arr(_ref("MissingAgent")),
            "diagnostics": _arr(_ref("Diagnostic")),
        },
        ("agents", "missing", "diagnostics"),
    )
    d["Delivery"] = _obj({"prompt_id": _str(), "kind": _ref("DeliveryKind")}, ("prompt_id", "kind"))
    d["DeliveryKind"] = {
        "oneOf": [
            _tagged("Started", _text_pair("turn_id")),
            _tagged("Steered", _text_pair("turn_id")),
            _tagged("Queued", _obj({"position": _uint()}, ("position",))),
        ]
    }
    d["SessionEntry"] = _obj(
        {"id": _str(), "closed": {"type": "boolean"}, "watchers": _uint(), "last_sequence": _uint()},
        ("id", "closed", "watchers", "last_sequence"),
    )
    return d


_OPEN_FIELDS: S = {
    "agent": _ref("AgentRef"),
    "dir": _str(),
    "resume": _opt_str(),
    "fork": _opt_str(),
    "fork_at": _opt_str(),
    "permission_mode": _null(_ref("PermissionMode")),
    "mcp_servers": _arr(_ref("McpServer")),
    "configure": {"type": "object", "additionalProperties": _ref("ConfigValue")},
}

_COMMAND_FIELDS: dict[str, tuple[S, tuple[str, ...]]] = {
    "discover": ({}, ()),
    "probe": ({"agent": _ref("AgentRef")}, ("agent",)),
    "plan_usage": ({"agent": _ref("AgentRef")}, ("agent",)),
    "generate": ({**_OPEN_FIELDS, "prompt": _str()}, ("agent", "dir", "prompt")),
    "open": (_OPEN_FIELDS, ("agent", "dir")),
    "sessions": ({}, ()),
    "prompt": ({"session": _str(), "text": _str(), "attachments": _arr(_str())}, ("session", "text")),
    "dequeue": ({"session": _str(), "prompt": _str()}, ("session", "prompt")),
    "answer": ({"session": _str(), "request": _str(), "answer": _ref("Answer")}, ("session", "request", "answer")),
    "configure": ({"session": _str(), "option": _str(), "value": _ref("ConfigValue")}, ("session", "option", "value")),
    "rollback": (
        {"session": _str(), "turns": {"type": "integer", "minimum": 1}, "scope": _ref("RollbackScope")},
        ("session", "turns", "scope"),
    ),
    "compact": ({"session": _str()}, ("session",)),
    "cancel": ({"session": _str(), "clear_queue": {"type": "boolean"}}, ("session",)),
    "info": ({"session": _str()}, ("session",)),
    "close": ({"session": _str()}, ("session",)),
    "attach": (
        {"session": _str(), "after": _null(_uint()), "control": {"type": "boolean"}},
        ("session",),
    ),
    "detach": ({"session": _str()}, ("session",)),
}


def _frame() -> S:
    assert set(_COMMAND_FIELDS) == set(COMMANDS), "every command has a schema"
    variants = []
    for cmd in COMMANDS:
        props, required = _COMMAND_FIELDS[cmd]
        variants.append(_obj({**props, "cmd": {"type": "string", "const": cmd}}, ("cmd", *required)))
    return {
        "description": "One line from the client: the id its reply carries, and the command.",
        "type": "object",
        "properties": {"id": _uint()},
        "required": ["id"],
        "oneOf": variants,
    }


def _line() -> S:
    return {
        "description": "One line to the client.",
        "anyOf": [
            _obj({"hello": _ref("Hello")}, ("hello",)),
            _obj({"id": _uint(), "ok": {}}, ("id", "ok")),
            _obj({"id": {"type": ["integer", "null"], "minimum": 0}, "error": _ref("ErrorBody")}, ("error",)),
            _obj({"event": _ref("Event")}, ("event",)),
            _obj({"session": _str(), "error": _ref("ErrorBody")}, ("session", "error")),
            _obj({"closed": _str()}, ("closed",)),
        ],
    }


def schema() -> S:
    """The whole document: ``definitions`` holds every wire type; each root validates there."""
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "anyagent serve, protocol 1",
        "description": "Every line in (Frame) and out (Line) of `anyagent serve`; anyagent-rs's sidecar shapes.",
        "type": "object",
        "properties": {name.lower(): _ref(name) for name in ROOTS},
        "definitions": _definitions(),
    }


def schema_text() -> str:
    """``schema()`` as the committed file holds it (two-space indent, newline at the end)."""
    return json.dumps(schema(), indent=2) + "\n"
