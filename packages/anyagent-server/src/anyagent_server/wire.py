"""The codec between anyagent's values and the sidecar's JSON (protocol 1, anyagent-rs's shapes).

The wire spells every value the way anyagent-rs's serde does, so a client written against that
project's ``schema.json`` reads this server unchanged:

- a variant of a union is externally tagged, ``{"TextDelta": {"message_id": "m1", "text": "hi"}}``;
  a variant without fields is a bare string, ``"ContextCompacted"``, ``"Cancelled"``;
- enum values are their CamelCase names, ``"AllowOnce"``, ``"NeedsInput"``, ``"Execute"``;
- a time is ``{"secs_since_epoch": s, "nanos_since_epoch": n}``.

Where this library carries more than that schema, the extra rides as an added field a strict
client ignores (never a changed one): see ``ADDITIONS``.

``encode_*`` turn anyagent values into JSON-ready Python data; ``decode_*`` read what a client
sends (and the mock scripts' event kinds) and raise ``WireError`` naming the JSON path of the
first problem.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from typing import Any, NoReturn, cast

from anyagent import (
    AgentDetails,
    AgentError,
    AgentInstallation,
    AgentOrigin,
    Answer,
    Authenticated,
    AuthKind,
    AuthRequired,
    AuthStatus,
    BooleanKind,
    Cancelled,
    Capabilities,
    Capability,
    Completed,
    CompletionSource,
    ConfigChoice,
    ConfigOption,
    ConfigValue,
    ContextCompacted,
    ContextUsage,
    Delivery,
    Diagnostic,
    DiagnosticInfo,
    DiagnosticLevel,
    DiscoveryReport,
    EnvVarLogin,
    Event,
    EventKind,
    Failed,
    FileDiff,
    InvalidRequest,
    McpServer,
    McpTool,
    MessageEnded,
    MissingAgent,
    NotInstalled,
    PermissionChoice,
    PermissionMode,
    PermissionRequest,
    PlanEntry,
    PlanEntryStatus,
    PlanUpdated,
    PlanUsage,
    PlanUsageUpdated,
    ProcessExited,
    PromptOrigin,
    Question,
    QuestionAnswer,
    QuestionChoice,
    QuestionRequest,
    Queued,
    ReasoningDelta,
    Refused,
    Request,
    RequestClosed,
    RequestOpened,
    RollbackScope,
    SelectKind,
    SessionInfo,
    SessionStatus,
    SessionUpdated,
    Started,
    StatusChanged,
    Steered,
    StopReason,
    TerminalLogin,
    TextDelta,
    ToolInput,
    ToolKind,
    ToolKindValue,
    ToolLocation,
    ToolOutputDelta,
    ToolStatus,
    ToolUpdate,
    ToolUpdated,
    TurnEnded,
    TurnStarted,
    Unauthenticated,
    UserMessage,
)
from anyagent import McpServer as _McpServerFactory

__all__ = [
    "ADDITIONS",
    "WireError",
    "event_line",
    "camel",
    "decode_answer",
    "decode_config_option",
    "decode_config_value",
    "decode_event_kind",
    "decode_mcp_server",
    "decode_permission_mode",
    "decode_rollback_scope",
    "decode_stop",
    "encode_delivery",
    "encode_details",
    "encode_discovery",
    "encode_error",
    "encode_event",
    "encode_event_kind",
    "encode_installation",
    "encode_plan_usage",
    "encode_session_info",
    "encode_time",
]

JSONData = Any

ADDITIONS: dict[str, str] = {
    "Event.kind": "extra variants a strict client reads as unknown: none today (every anyagent kind has its rs twin)",
    "AgentInstallation": "`wire` (the adapter's wire name) and `version` (when discovery read it)",
    "ToolUpdate": "`line_locations` ([{path, line}]) when a location carries a line number",
    "PlanEntry": "`priority` when the agent gives one",
    "Diagnostic": "`code` (anyagent.DiagnosticCode) and `raw`",
    "ConfigOption": "`between_turns` (the option applies from the next turn)",
    "ConfigChoice": "`aliases`",
    "EnvVar": "`description` inside the `EnvVar` object",
    "UsageWindow": "`used_percent_exact` (the float the agent reported; `used_percent` is it rounded)",
    "ErrorBody": "`detail` on every kind without fields of its own; `lagged: true` on the lag close",
}
"""What this server writes beyond anyagent-rs's schema, per wire type (documented in docs/sidecar.md)."""


class WireError(InvalidRequest):
    """A client value does not have the wire's shape; ``path`` is where (``$.answer.Permission``)."""

    def __init__(self, message: str, path: str = "$") -> None:
        super().__init__(f"{message} @ {path}")
        self.path = path


def _fail(message: str, path: str) -> NoReturn:
    raise WireError(message, path)


_CAMEL = re.compile(r"(?:^|_)([a-z0-9])")


def camel(value: str) -> str:
    """``"needs_input"`` → ``"NeedsInput"`` (the rs spelling of an enum value)."""
    return _CAMEL.sub(lambda m: m.group(1).upper(), value)


def _enum_wire(member: Any) -> str:
    return camel(str(member.value))


# ---------------------------------------------------------------------------------------------
# encoding: anyagent value -> wire JSON data


def encode_time(when: datetime | None) -> dict[str, int]:
    """A ``SystemTime``: whole seconds and nanoseconds since the Unix epoch (None → the epoch)."""
    if when is None:
        return {"secs_since_epoch": 0, "nanos_since_epoch": 0}
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    delta = when - datetime(1970, 1, 1, tzinfo=timezone.utc)
    secs = delta.days * 86400 + delta.seconds
    if secs < 0:
        return {"secs_since_epoch": 0, "nanos_since_epoch": 0}
    return {"secs_since_epoch": secs, "nanos_since_epoch": delta.microseconds * 1000}


def _json_free(value: Any) -> JSONData:
    """A free-form JSON field (frozen mappings, tuples) as plain JSON data."""
    if isinstance(value, Mapping):
        return {str(k): _json_free(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_free(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _tool_kind(kind: ToolKindValue) -> JSONData:
    if isinstance(kind, McpTool):
        return {"Mcp": {"server": kind.server, "tool": kind.tool}}
    return _enum_wire(kind)


def _tool_input(value: ToolInput) -> JSONData:
    if value.command is not None:
        return {"Command": {"command": value.command, "cwd": None}}
    if value.path is not None:
        return {"Path": value.path}
    if value.pattern is not None:
        return {"Pattern": value.pattern}
    if value.url is not None:
        return {"Url": value.url}
    if value.description is not None:
        return {"Text": value.description}
    return "None"


def _tool_update(tool: ToolUpdate) -> dict[str, JSONData]:
    raw: JSONData = None
    if tool.raw is not None:
        data = _json_free(tool.raw)
        raw = data if set(data) == {"name", "input"} else {"name": tool.title, "input": data}
    elif tool.input.arguments:
        raw = {"name": tool.title, "input": _json_free(tool.input.arguments)}
    out: dict[str, JSONData] = {
        "id": tool.id,
        "kind": _tool_kind(tool.kind),
        "title": tool.title,
        "status": _enum_wire(tool.status),
        "input": _tool_input(tool.input),
        "output": tool.output,
        "diffs": [{"path": d.path, "old_text": d.old_text, "new_text": d.new_text} for d in tool.diffs],
        "locations": [loc.path for loc in tool.locations],
        "raw": raw,
    }
    if any(loc.line is not None for loc in tool.locations):
        out["line_locations"] = [{"path": loc.path, "line": loc.line} for loc in tool.locations]
    return out


def _request(request: Request) -> JSONData:
    if isinstance(request, PermissionRequest):
        return {
            "Permission": {
                "id": request.id,
                "tool": _tool_update(request.tool),
                "options": [_enum_wire(o) for o in request.options],
                "detail": request.detail,
            }
        }
    return {
        "Question": {
            "id": request.id,
            "questions": [
                {
                    "id": q.id,
                    "text": q.text,
                    "header": q.header,
                    "choices": [{"id": c.id, "label": c.label, "description": c.description} for c in q.choices],
                    "multi_select": q.multi_select,
                    "allows_free_text": q.allows_free_text,
                }
                for q in request.questions
            ],
        }
    }


def _login(method: Any) -> JSONData:
    if isinstance(method, TerminalLogin):
        return {
            "Terminal": {"command": list(method.command), "env": dict(method.env), "description": method.description}
        }
    assert isinstance(method, EnvVarLogin)
    return {"EnvVar": {"name": method.name, "description": method.description}}


def _auth(auth: AuthStatus) -> JSONData:
    if isinstance(auth, Authenticated):
        kind: JSONData = {"Other": "other"} if auth.kind is AuthKind.OTHER else _enum_wire(auth.kind)
        account = None if auth.account is None else {"email": auth.account.email, "plan": auth.account.plan}
        return {"Authenticated": {"kind": kind, "account": account}}
    if isinstance(auth, Unauthenticated):
        return {"Unauthenticated": {"login": [_login(m) for m in auth.login]}}
    return "Unknown"


def _config_value(value: ConfigValue | None) -> JSONData:
    return value


def _config_option(option: ConfigOption) -> dict[str, JSONData]:
    kind: JSONData
    if isinstance(option.kind, SelectKind):
        choices = []
        for c in option.kind.choices:
            choice: dict[str, JSONData] = {"value": c.value, "label": c.label or c.value, "description": c.description}
            if c.aliases:
                choice["aliases"] = list(c.aliases)
            choices.append(choice)
        kind = {"Select": {"choices": choices}}
    else:
        kind = "Boolean"
    return {
        "id": option.id,
        "name": option.name,
        "category": option.category,
        "kind": kind,
        "current": _config_value(option.current),
        "live": option.live,
        "between_turns": option.between_turns,
    }


_CAPABILITY_ORDER = list(Capability)


def _capabilities(caps: Capabilities) -> dict[str, JSONData]:
    features = [_enum_wire(c) for c in _CAPABILITY_ORDER if c in caps.items]
    transports = [camel(t) for t in sorted(caps.mcp_transports)]
    return {"features": features, "mcp_transports": transports}


def encode_details(details: AgentDetails) -> dict[str, JSONData]:
    """``AgentDetails`` (the ``probe`` reply)."""
    return {
        "version": details.version,
        "auth": _auth(details.auth),
        "capabilities": _capabilities(details.capabilities),
        "config_options": [_config_option(o) for o in details.config_options],
        "commands": [
            {"name": c.name, "description": c.description, "input_hint": c.input_hint} for c in details.commands
        ],
    }


def _missing(missing: MissingAgent) -> dict[str, JSONData]:
    return {
        "id": missing.id,
        "name": missing.name,
        "searched": list(missing.searched),
        "install_hint": missing.install_hint,
    }


def encode_installation(agent: AgentInstallation) -> dict[str, JSONData]:
    """``AgentInstallation``; ``wire`` and ``version`` are additions."""
    return {
        "id": agent.id,
        "name": agent.name,
        "executable_path": str(agent.executable_path),
        "source": _enum_wire(agent.source),
        "upgrade": None if agent.upgrade is None else _missing(agent.upgrade),
        "acp_args": list(agent.args) if agent.wire == "acp" else None,
        "wire": agent.wire,
        "version": agent.version,
    }


def encode_session_info(info: SessionInfo) -> dict[str, JSONData]:
    """``SessionInfo`` (the ``open`` and ``info`` replies, ``SessionUpdated``)."""
    return {
        "id": info.session_id,
        "agent": encode_installation(info.agent),
        "details": encode_details(info.details),
        "configuration": {"options": {k: _config_value(v) for k, v in info.configuration.items()}},
        "resume_token": info.resume_token,
        "title": info.title,
        "status": _enum_wire(info.status),
    }


def encode_plan_usage(usage: PlanUsage) -> dict[str, JSONData]:
    """``PlanUsage``: ``used_percent`` is rounded to an integer 0–255 (the exact float rides beside it)."""
    windows = []
    for w in usage.windows:
        exact = float(w.used_percent) if math.isfinite(w.used_percent) else 0.0
        windows.append(
            {
                "label": w.label,
                "used_percent": max(0, min(255, round(exact))),
                "resets_at": None if w.resets_at is None else encode_time(w.resets_at),
                "used_percent_exact": exact,
            }
        )
    return {"plan": usage.plan, "windows": windows, "fetched_at": encode_time(usage.fetched_at)}


def _diagnostic(info: DiagnosticInfo) -> dict[str, JSONData]:
    return {"level": _enum_wire(info.level), "message": info.message, "code": info.code, "raw": _json_free(info.raw)}


def encode_stop(stop: StopReason) -> JSONData:
    """``StopReason``: ``"Cancelled"``, ``"Refused"``, ``{"Completed": {"source": ..}}``, ``{"Failed": ..}``."""
    if isinstance(stop, Completed):
        return {"Completed": {"source": _enum_wire(stop.source)}}
    if isinstance(stop, Failed):
        return {"Failed": {"message": stop.message}}
    if isinstance(stop, Refused):
        return "Refused"
    return "Cancelled"


def encode_event_kind(kind: EventKind) -> JSONData:
    """One ``EventKind``, externally tagged."""
    if isinstance(kind, TextDelta):
        return {"TextDelta": {"message_id": kind.message_id, "text": kind.text}}
    if isinstance(kind, ReasoningDelta):
        return {"ReasoningDelta": {"message_id": kind.message_id, "text": kind.text}}
    if isinstance(kind, UserMessage):
        return {"UserMessage": {"message_id": kind.message_id, "text": kind.text}}
    if isinstance(kind, MessageEnded):
        return {"MessageEnded": {"message_id": kind.message_id}}
    if isinstance(kind, TurnStarted):
        origin: JSONData = "Agent" if isinstance(kind.origin, AgentOrigin) else {"Prompt": kind.origin.prompt_id}
        return {"TurnStarted": {"origin": origin}}
    if isinstance(kind, TurnEnded):
        return {"TurnEnded": {"stop": encode_stop(kind.stop), "background": list(kind.background)}}
    if isinstance(kind, ToolUpdated):
        return {"ToolUpdated": _tool_update(kind.tool)}
    if isinstance(kind, ToolOutputDelta):
        return {"ToolOutputDelta": {"tool_id": kind.tool_id, "text": kind.text}}
    if isinstance(kind, PlanUpdated):
        entries = []
        for e in kind.entries:
            entry: dict[str, JSONData] = {"text": e.content, "status": _enum_wire(e.status)}
            if e.priority is not None:
                entry["priority"] = e.priority
            entries.append(entry)
        return {"PlanUpdated": {"entries": entries}}
    if isinstance(kind, RequestOpened):
        return {"RequestOpened": _request(kind.request)}
    if isinstance(kind, RequestClosed):
        return {"RequestClosed": {"request_id": kind.request_id}}
    if isinstance(kind, SessionUpdated):
        return {"SessionUpdated": encode_session_info(kind.info)}
    if isinstance(kind, StatusChanged):
        return {"StatusChanged": _enum_wire(kind.status)}
    if isinstance(kind, ContextUsage):
        cost = kind.cost_usd if kind.cost_usd is None or math.isfinite(kind.cost_usd) else None
        return {
            "ContextUsage": {"used_tokens": kind.used_tokens, "window_tokens": kind.window_tokens, "cost_usd": cost}
        }
    if isinstance(kind, ContextCompacted):
        return "ContextCompacted"
    if isinstance(kind, PlanUsageUpdated):
        return {"PlanUsageUpdated": encode_plan_usage(kind.usage)}
    if isinstance(kind, Diagnostic):
        return {"Diagnostic": _diagnostic(kind.diagnostic)}
    raise TypeError(f"not an event kind: {type(kind).__name__}")  # pragma: no cover - the union is closed


def encode_event(event: Event) -> dict[str, JSONData]:
    """One ``Event``: sequence, occurred_at (``SystemTime``), session_id, turn_info, kind, extensions."""
    turn = event.turn_info
    return {
        "sequence": event.sequence,
        "occurred_at": encode_time(event.occurred_at),
        "session_id": event.session_id,
        "turn_info": None if turn is None else {"id": turn.id, "parent_tool_id": turn.parent_tool_id},
        "kind": encode_event_kind(event.kind),
        "extensions": _json_free(event.extensions),
    }


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_string = json.encoder.encode_basestring  # what the line encoder uses for str with ensure_ascii=False
_DELTAS: dict[type, tuple[str, str]] = {
    TextDelta: ('"kind":{"TextDelta":{"message_id":', "message_id"),
    ReasoningDelta: ('"kind":{"ReasoningDelta":{"message_id":', "message_id"),
    ToolOutputDelta: ('"kind":{"ToolOutputDelta":{"tool_id":', "tool_id"),
}


def event_line(event: Event, dumps: Callable[[Any], str]) -> str:
    """The ``{"event": …}`` line of ``event``: the same text as ``dumps({"event": encode_event(event)})``.

    The streaming deltas (text, reasoning, tool output) without extensions are written directly,
    with no intermediate dicts (they are nearly every line of a flood); every other event goes
    through ``encode_event`` and ``dumps``.
    """
    kind = event.kind
    delta = _DELTAS.get(type(kind))
    if delta is None or event.extensions:
        return dumps({"event": encode_event(event)})
    when: datetime | None = event.occurred_at
    if when is not None and when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    secs, nanos = _time_parts(when)
    turn = event.turn_info
    if turn is None:
        turn_text = "null"
    else:
        parent = turn.parent_tool_id
        turn_text = f'{{"id":{_string(turn.id)},"parent_tool_id":{"null" if parent is None else _string(parent)}}}'
    head, field = delta
    text = cast("TextDelta | ReasoningDelta | ToolOutputDelta", kind).text
    return (
        f'{{"event":{{"sequence":{event.sequence:d},"occurred_at":{{"secs_since_epoch":{secs:d},'
        f'"nanos_since_epoch":{nanos:d}}},"session_id":{_string(event.session_id)},"turn_info":{turn_text},'
        f'{head}{_string(getattr(kind, field))},"text":{_string(text)}}}}},"extensions":{{}}}}}}'
    )


def _time_parts(when: datetime | None) -> tuple[int, int]:
    if when is None:
        return 0, 0
    delta = when - _EPOCH
    secs = delta.days * 86400 + delta.seconds
    if secs < 0:
        return 0, 0
    return secs, delta.microseconds * 1000


def encode_discovery(report: DiscoveryReport) -> dict[str, JSONData]:
    """``DiscoveryReport`` (the ``discover`` reply)."""
    return {
        "agents": [encode_installation(a) for a in report.agents],
        "missing": [_missing(m) for m in report.missing],
        "diagnostics": [_diagnostic(d) for d in report.diagnostics],
    }


def encode_delivery(delivery: Delivery) -> dict[str, JSONData]:
    """``Delivery`` (the ``prompt`` reply)."""
    kind = delivery.kind
    body: JSONData
    if isinstance(kind, Started):
        body = {"Started": {"turn_id": kind.turn_id}}
    elif isinstance(kind, Steered):
        body = {"Steered": {"turn_id": kind.turn_id}}
    else:
        assert isinstance(kind, Queued)
        body = {"Queued": {"position": kind.position}}
    return {"prompt_id": delivery.prompt_id, "kind": body}


def encode_error(error: BaseException, kind: str | None = None, **fields: JSONData) -> dict[str, JSONData]:
    """An ``ErrorBody``: ``kind`` (the error class), ``message``, and the variant's own fields.

    ``NotInstalled`` carries ``agent``, ``AuthRequired`` ``login``, ``ProcessExited`` ``status`` and
    ``stderr``; every other kind carries ``detail``.
    """
    message = error.message if isinstance(error, AgentError) else str(error)
    body: dict[str, JSONData] = {"kind": kind or type(error).__name__, "message": message}
    if isinstance(error, WireError):
        body["kind"] = kind or "InvalidRequest"
    if isinstance(error, NotInstalled):
        body["agent"] = error.agent_id
    elif isinstance(error, AuthRequired):
        body["login"] = [_login(m) for m in error.login]
    elif isinstance(error, ProcessExited):
        body["status"] = error.status
        body["stderr"] = error.stderr
    else:
        body["detail"] = message
    body.update(fields)
    return body


# ---------------------------------------------------------------------------------------------
# decoding: wire JSON data (from a client, or a mock script) -> anyagent value


def _obj(data: Any, path: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        _fail(f"expected an object, got {_jtype(data)}", path)
    return data


def _jtype(data: Any) -> str:
    if data is None:
        return "null"
    if isinstance(data, bool):
        return "a boolean"
    if isinstance(data, (int, float)):
        return "a number"
    if isinstance(data, str):
        return "a string"
    if isinstance(data, list):
        return "an array"
    return "an object"


def _str(data: Any, path: str) -> str:
    if not isinstance(data, str):
        _fail(f"expected a string, got {_jtype(data)}", path)
    return data


def _opt_str(data: Any, path: str) -> str | None:
    return None if data is None else _str(data, path)


def _bool(data: Any, path: str) -> bool:
    if not isinstance(data, bool):
        _fail(f"expected a boolean, got {_jtype(data)}", path)
    return data


def _int(data: Any, path: str, minimum: int = 0) -> int:
    if isinstance(data, bool) or not isinstance(data, int):
        _fail(f"expected an integer, got {_jtype(data)}", path)
    if data < minimum:
        _fail(f"expected an integer >= {minimum}", path)
    return data


def _list(data: Any, path: str) -> list[Any]:
    if not isinstance(data, list):
        _fail(f"expected an array, got {_jtype(data)}", path)
    return data


def _strs(data: Any, path: str) -> list[str]:
    return [_str(v, f"{path}[{i}]") for i, v in enumerate(_list(data, path))]


def _str_map(data: Any, path: str) -> dict[str, str]:
    return {k: _str(v, f"{path}.{k}") for k, v in _obj(data, path).items()}


def _variant(data: Any, path: str, units: tuple[str, ...], tagged: tuple[str, ...]) -> tuple[str, Any]:
    """An externally tagged value: ``"Unit"`` or ``{"Tag": body}``."""
    if isinstance(data, str):
        if data in units:
            return data, None
        _fail(f"unknown variant {data!r} (expected one of {', '.join(units + tagged)})", path)
    obj = _obj(data, path)
    if len(obj) != 1:
        _fail("expected an object with exactly one variant key", path)
    ((tag, body),) = obj.items()
    if tag not in tagged:
        _fail(f"unknown variant {tag!r} (expected one of {', '.join(units + tagged)})", path)
    return tag, body


def _enum_of(enum_type: Any, data: Any, path: str) -> Any:
    by_wire = {_enum_wire(m): m for m in enum_type}
    text = _str(data, path)
    if text not in by_wire:
        _fail(f"unknown value {text!r} (expected one of {', '.join(by_wire)})", path)
    return by_wire[text]


def decode_config_value(data: Any, path: str = "$") -> ConfigValue:
    """A ``ConfigValue``: a string or a boolean."""
    if isinstance(data, (str, bool)):
        return data
    _fail(f"expected a string or a boolean, got {_jtype(data)}", path)


def decode_permission_mode(data: Any, path: str = "$") -> PermissionMode:
    """``"Ask"`` or ``"AutoApprove"``."""
    return {"Ask": PermissionMode.ASK, "AutoApprove": PermissionMode.AUTO_APPROVE}.get(_str(data, path)) or _fail(
        f"unknown permission mode {data!r} (expected Ask or AutoApprove)", path
    )


def decode_rollback_scope(data: Any, path: str = "$") -> RollbackScope:
    """``"Conversation"`` or ``"ConversationAndFiles"``."""
    return _enum_of(RollbackScope, data, path)  # type: ignore[no-any-return]


def decode_answer(data: Any, path: str = "$") -> Answer:
    """``{"Permission": "AllowOnce"}`` or ``{"Question": [{"Choices": [..]} | {"Text": ".."}, ..]}``."""
    tag, body = _variant(data, path, (), ("Permission", "Question"))
    if tag == "Permission":
        return Answer.permission(_enum_of(PermissionChoice, body, f"{path}.Permission"))
    answers: list[QuestionAnswer] = []
    for i, item in enumerate(_list(body, f"{path}.Question")):
        here = f"{path}.Question[{i}]"
        kind, value = _variant(item, here, (), ("Choices", "Text"))
        if kind == "Text":
            answers.append(QuestionAnswer.text(_str(value, f"{here}.Text")))
        else:
            answers.append(QuestionAnswer.choices(_strs(value, f"{here}.Choices")))
    return Answer.question(answers)


def decode_mcp_server(data: Any, path: str = "$") -> Any:
    """``{"name": .., "connection": {"Stdio": {command, args, env}} | {"Http": {url, headers}} | {"Sse": ..}}``."""
    obj = _obj(data, path)
    name = _str(obj.get("name"), f"{path}.name")
    tag, body = _variant(obj.get("connection"), f"{path}.connection", (), ("Stdio", "Http", "Sse"))
    here = f"{path}.connection.{tag}"
    conn = _obj(body, here)
    if tag == "Stdio":
        return _McpServerFactory.stdio(
            name,
            _str(conn.get("command"), f"{here}.command"),
            _strs(conn.get("args", []), f"{here}.args"),
            _str_map(conn.get("env", {}), f"{here}.env"),
        )
    url = _str(conn.get("url"), f"{here}.url")
    server: Any = McpServer.http(name, url) if tag == "Http" else McpServer.sse(name, url)
    for key, value in _str_map(conn.get("headers", {}), f"{here}.headers").items():
        server = server.with_header(key, value)
    return server


def decode_stop(data: Any, path: str = "$") -> StopReason:
    """A ``StopReason`` in the wire's shape."""
    tag, body = _variant(data, path, ("Cancelled", "Refused"), ("Completed", "Failed"))
    if tag == "Cancelled":
        return Cancelled()
    if tag == "Refused":
        return Refused()
    obj = _obj(body, f"{path}.{tag}")
    if tag == "Failed":
        return Failed(_str(obj.get("message"), f"{path}.Failed.message"))
    source = _enum_of(CompletionSource, obj.get("source", "Protocol"), f"{path}.Completed.source")
    return Completed(source)


def _decode_tool_kind(data: Any, path: str) -> ToolKindValue:
    if isinstance(data, dict):
        _tag, body = _variant(data, path, (), ("Mcp",))
        obj = _obj(body, f"{path}.Mcp")
        return McpTool(_str(obj.get("server"), f"{path}.Mcp.server"), _str(obj.get("tool"), f"{path}.Mcp.tool"))
    return _enum_of(ToolKind, data, path)  # type: ignore[no-any-return]


def _decode_tool_input(data: Any, path: str) -> ToolInput:
    tag, body = _variant(data, path, ("None",), ("Path", "Command", "Pattern", "Url", "Query", "Text"))
    if tag == "None":
        return ToolInput()
    if tag == "Command":
        obj = _obj(body, f"{path}.Command")
        return ToolInput(command=_str(obj.get("command"), f"{path}.Command.command"))
    text = _str(body, f"{path}.{tag}")
    if tag == "Path":
        return ToolInput(path=text)
    if tag == "Pattern":
        return ToolInput(pattern=text)
    if tag == "Url":
        return ToolInput(url=text)
    if tag == "Query":
        return ToolInput(pattern=text)
    return ToolInput(description=text)


def _decode_tool_update(data: Any, path: str) -> ToolUpdate:
    obj = _obj(data, path)
    raw = obj.get("raw")
    return ToolUpdate(
        id=_str(obj.get("id"), f"{path}.id"),
        kind=_decode_tool_kind(obj.get("kind", "Other"), f"{path}.kind"),
        title=_str(obj.get("title", ""), f"{path}.title"),
        status=_enum_of(ToolStatus, obj.get("status", "Pending"), f"{path}.status"),
        input=_decode_tool_input(obj.get("input", "None"), f"{path}.input"),
        output=_opt_str(obj.get("output"), f"{path}.output"),
        diffs=tuple(
            FileDiff(
                path=_str(_obj(d, f"{path}.diffs[{i}]").get("path"), f"{path}.diffs[{i}].path"),
                new_text=_str(d.get("new_text"), f"{path}.diffs[{i}].new_text"),
                old_text=_opt_str(d.get("old_text"), f"{path}.diffs[{i}].old_text"),
            )
            for i, d in enumerate(_list(obj.get("diffs", []), f"{path}.diffs"))
        ),
        locations=tuple(ToolLocation(p) for p in _strs(obj.get("locations", []), f"{path}.locations")),
        raw=None if raw is None else _obj(raw, f"{path}.raw"),
    )


def _decode_request(data: Any, path: str) -> Request:
    tag, body = _variant(data, path, (), ("Permission", "Question"))
    here = f"{path}.{tag}"
    obj = _obj(body, here)
    if tag == "Permission":
        return PermissionRequest(
            id=_str(obj.get("id"), f"{here}.id"),
            tool=_decode_tool_update(obj.get("tool"), f"{here}.tool"),
            options=tuple(
                _enum_of(PermissionChoice, o, f"{here}.options[{i}]")
                for i, o in enumerate(_list(obj.get("options", []), f"{here}.options"))
            ),
            detail=_opt_str(obj.get("detail"), f"{here}.detail"),
        )
    questions = []
    for i, q in enumerate(_list(obj.get("questions"), f"{here}.questions")):
        qp = f"{here}.questions[{i}]"
        qo = _obj(q, qp)
        questions.append(
            Question(
                id=_str(qo.get("id"), f"{qp}.id"),
                text=_str(qo.get("text"), f"{qp}.text"),
                header=_opt_str(qo.get("header"), f"{qp}.header"),
                choices=tuple(
                    QuestionChoice(
                        id=_str(_obj(c, f"{qp}.choices[{j}]").get("id"), f"{qp}.choices[{j}].id"),
                        label=_str(c.get("label"), f"{qp}.choices[{j}].label"),
                        description=_opt_str(c.get("description"), f"{qp}.choices[{j}].description"),
                    )
                    for j, c in enumerate(_list(qo.get("choices", []), f"{qp}.choices"))
                ),
                multi_select=_bool(qo.get("multi_select", False), f"{qp}.multi_select"),
                allows_free_text=_bool(qo.get("allows_free_text", True), f"{qp}.allows_free_text"),
            )
        )
    return QuestionRequest(id=_str(obj.get("id"), f"{here}.id"), questions=tuple(questions))


def decode_config_option(data: Any, path: str = "$") -> ConfigOption:
    """A ``ConfigOption`` in the wire's shape (the mock scripts' ``options``)."""
    obj = _obj(data, path)
    tag, body = _variant(obj.get("kind"), f"{path}.kind", ("Boolean",), ("Select",))
    kind: Any
    if tag == "Boolean":
        kind = BooleanKind()
    else:
        here = f"{path}.kind.Select.choices"
        kind = SelectKind(
            tuple(
                ConfigChoice(
                    value=_str(_obj(c, f"{here}[{i}]").get("value"), f"{here}[{i}].value"),
                    label=_str(c.get("label", ""), f"{here}[{i}].label"),
                    description=_opt_str(c.get("description"), f"{here}[{i}].description"),
                )
                for i, c in enumerate(_list(_obj(body, f"{path}.kind.Select").get("choices"), here))
            )
        )
    current = obj.get("current")
    return ConfigOption(
        id=_str(obj.get("id"), f"{path}.id"),
        name=_str(obj.get("name"), f"{path}.name"),
        kind=kind,
        current=None if current is None else decode_config_value(current, f"{path}.current"),
        live=_bool(obj.get("live", True), f"{path}.live"),
        category=_opt_str(obj.get("category"), f"{path}.category"),
    )


def _msg(cls: Callable[[str, str], EventKind]) -> Callable[[Any, str], EventKind]:
    def decode(body: Any, path: str) -> EventKind:
        obj = _obj(body, path)
        return cls(_str(obj.get("message_id"), f"{path}.message_id"), _str(obj.get("text"), f"{path}.text"))

    return decode


def _decode_turn_started(body: Any, path: str) -> EventKind:
    tag, value = _variant(_obj(body, path).get("origin"), f"{path}.origin", ("Agent",), ("Prompt",))
    if tag == "Agent":
        return TurnStarted(AgentOrigin())
    return TurnStarted(PromptOrigin(_str(value, f"{path}.origin.Prompt")))


def _decode_turn_ended(body: Any, path: str) -> EventKind:
    obj = _obj(body, path)
    return TurnEnded(decode_stop(obj.get("stop"), f"{path}.stop"), tuple(_strs(obj.get("background", []), path)))


def _decode_plan(body: Any, path: str) -> EventKind:
    entries = []
    for i, e in enumerate(_list(_obj(body, path).get("entries"), f"{path}.entries")):
        here = f"{path}.entries[{i}]"
        obj = _obj(e, here)
        entries.append(
            PlanEntry(
                _str(obj.get("text"), f"{here}.text"),
                _enum_of(PlanEntryStatus, obj.get("status", "Pending"), f"{here}.status"),
            )
        )
    return PlanUpdated(tuple(entries))


def _decode_context_usage(body: Any, path: str) -> EventKind:
    obj = _obj(body, path)
    window = obj.get("window_tokens")
    cost = obj.get("cost_usd")
    if cost is not None and (isinstance(cost, bool) or not isinstance(cost, (int, float))):
        _fail("expected a number", f"{path}.cost_usd")
    return ContextUsage(
        _int(obj.get("used_tokens"), f"{path}.used_tokens"),
        None if window is None else _int(window, f"{path}.window_tokens"),
        None if cost is None else float(cost),
    )


def _decode_diagnostic(body: Any, path: str) -> EventKind:
    obj = _obj(body, path)
    return Diagnostic(
        DiagnosticInfo(
            _str(obj.get("message"), f"{path}.message"),
            _enum_of(DiagnosticLevel, obj.get("level", "Warning"), f"{path}.level"),
            _opt_str(obj.get("code"), f"{path}.code"),
            obj.get("raw"),
        )
    )


_KIND_DECODERS: dict[str, Callable[[Any, str], EventKind]] = {
    "TextDelta": _msg(TextDelta),
    "ReasoningDelta": _msg(ReasoningDelta),
    "UserMessage": _msg(UserMessage),
    "MessageEnded": lambda b, p: MessageEnded(_str(_obj(b, p).get("message_id"), f"{p}.message_id")),
    "TurnStarted": _decode_turn_started,
    "TurnEnded": _decode_turn_ended,
    "ToolUpdated": lambda b, p: ToolUpdated(_decode_tool_update(b, p)),
    "ToolOutputDelta": lambda b, p: ToolOutputDelta(
        _str(_obj(b, p).get("tool_id"), f"{p}.tool_id"), _str(b.get("text"), f"{p}.text")
    ),
    "PlanUpdated": _decode_plan,
    "RequestOpened": lambda b, p: RequestOpened(_decode_request(b, p)),
    "RequestClosed": lambda b, p: RequestClosed(_str(_obj(b, p).get("request_id"), f"{p}.request_id")),
    "StatusChanged": lambda b, p: StatusChanged(_enum_of(SessionStatus, b, p)),
    "ContextUsage": _decode_context_usage,
    "Diagnostic": _decode_diagnostic,
}


def decode_event_kind(data: Any, path: str = "$") -> EventKind:
    """An ``EventKind`` in the wire's shape: what a mock script's ``Emit`` step holds.

    ``SessionUpdated`` and ``PlanUsageUpdated`` are the engine's to emit and are refused here.
    """
    tag, body = _variant(data, path, ("ContextCompacted",), tuple(_KIND_DECODERS))
    if tag == "ContextCompacted":
        return ContextCompacted()
    return _KIND_DECODERS[tag](body, f"{path}.{tag}")
