"""The fake model's HTTP side: routing, credentials, logging, streaming.

In: HTTP requests from an agent CLI on 127.0.0.1. Out: answers in the API the path names, decided
by the ``FakeModel``'s script; one ``LoggedRequest`` per request (kept in memory and appended to
the JSONL log). Paths:

* ``POST …/messages`` (Anthropic Messages, SSE or JSON), ``POST …/messages/count_tokens``
* ``POST …/chat/completions`` (OpenAI Chat Completions, SSE or JSON)
* ``POST …/responses`` (OpenAI Responses, SSE or JSON)
* ``POST …/models/<m>:streamGenerateContent`` (Gemini; SSE with ``alt=sse``, else a JSON array),
  ``:generateContent``, ``:countTokens``, ``:embedContent`` / ``:batchEmbedContents``
* ``GET …/models`` (a list in both the Anthropic and the OpenAI shape; Gemini's under ``/v1beta``),
  ``GET …/models/<id>``
* anything else: ``HEAD`` → 200 empty, other methods → 200 ``{}``
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

import attrs

from .._httpserver import RequestHandler
from ._conversation import Dialect, conversation_from
from ._render import Block, SseEvent, plan_blocks, render_error, render_json, render_stream, total_delay
from ._script import Fail, Reply, Slow, Text, Thinking

if TYPE_CHECKING:
    from . import FakeModel

__all__ = ["LoggedRequest", "make_handler"]

SECRET_HEADERS = frozenset({"authorization", "x-api-key", "x-goog-api-key", "cookie", "proxy-authorization", "api-key"})
SKIPPED_HEADERS = frozenset({"content-length", "connection", "accept-encoding", "host", "transfer-encoding"})
FAKE_MODELS = ("fake-model", "claude-fake-1", "claude-fake-2")


@attrs.define
class LoggedRequest:
    """One request the fake model received and what it did about it.

    ``dialect`` is the API (None for non-model paths), ``side_call`` why it was treated as a side
    call, ``reply`` a summary (``text``, ``thinking``, ``tools``, ``status``), ``outcome`` one of
    ``"ok"``, ``"error"``, ``"disconnected"`` (the client went away mid-stream).
    """

    number: int
    elapsed: float
    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: Any
    dialect: str | None = None
    side_call: str | None = None
    reply: dict[str, Any] | None = None
    outcome: str = "ok"

    @property
    def is_model_call(self) -> bool:
        """A request to a model endpoint that is not a side call."""
        return self.dialect is not None and self.side_call is None and self.reply is not None

    def to_json(self) -> dict[str, Any]:
        """The JSONL log record."""
        return attrs.asdict(self)


def _redact(name: str, value: str) -> str:
    if name.lower() in SECRET_HEADERS:
        return f"<redacted {len(value)} chars, starts {value[:6]!r}>"
    return value


def _summary(reply: Reply, blocks: list[Block]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    texts = [step.text for step in reply.steps if isinstance(step, Text)]
    if texts:
        out["text"] = "".join(texts)
    thoughts = [step.text for step in reply.steps if isinstance(step, Thinking)]
    if thoughts:
        out["thinking"] = "".join(thoughts)
    slow = [step.chunks for step in reply.steps if isinstance(step, Slow)]
    if slow:
        out["slow_chunks"] = sum(slow)
    tools = [
        {"name": block.name, "id": block.tool_id, "arguments": block.arguments}
        for block in blocks
        if block.kind == "tool"
    ]
    if tools:
        out["tools"] = tools
    if reply.failure is not None:
        out["status"] = reply.failure.status
    return out


def _dialect_for(method: str, path: str) -> Dialect | None:
    if method != "POST":
        return None
    if path.endswith("/messages"):
        return Dialect.ANTHROPIC
    if path.endswith("/chat/completions"):
        return Dialect.OPENAI_CHAT
    if path.endswith("/responses"):
        return Dialect.OPENAI_RESPONSES
    if ":streamGenerateContent" in path or ":generateContent" in path:
        return Dialect.GEMINI
    return None


def _token_estimate(raw: bytes) -> int:
    return max(1, len(raw) // 4)


def _model_list() -> dict[str, Any]:
    data = [
        {
            "id": name,
            "object": "model",
            "type": "model",
            "display_name": name,
            "owned_by": "anyagent-testkit",
            "created": 0,
            "created_at": "2026-01-01T00:00:00Z",
        }
        for name in FAKE_MODELS
    ]
    return {"object": "list", "data": data, "has_more": False, "first_id": data[0]["id"], "last_id": data[-1]["id"]}


def _gemini_models() -> dict[str, Any]:
    return {
        "models": [
            {
                "name": f"models/{name}",
                "displayName": name,
                "supportedGenerationMethods": ["generateContent", "streamGenerateContent", "countTokens"],
            }
            for name in ("gemini-fake", "gemini-2.5-pro", "gemini-2.5-flash")
        ]
    }


class _LogFile:
    def __init__(self, path: Path | None) -> None:
        self._path = path
        self._lock = threading.Lock()
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)

    def write(self, record: LoggedRequest) -> None:
        if self._path is None:
            return
        line = json.dumps(record.to_json(), default=str, ensure_ascii=False)
        with self._lock, self._path.open("a", encoding="utf-8") as handle:
            handle.write(line + "\n")


def make_handler(model: FakeModel, log_path: Path | None) -> type[RequestHandler]:
    """A request handler class bound to ``model`` (script, ids, records) and the log file."""
    log_file = _LogFile(log_path)

    class Handler(RequestHandler):
        def do_HEAD(self) -> None:
            self._handle()

        def do_GET(self) -> None:
            self._handle()

        def do_POST(self) -> None:
            self._handle()

        def do_PUT(self) -> None:
            self._handle()

        def do_PATCH(self) -> None:
            self._handle()

        def do_DELETE(self) -> None:
            self._handle()

        def do_OPTIONS(self) -> None:
            self._handle()

        def _handle(self) -> None:
            split = urlsplit(self.path)
            try:
                raw = self.read_body()
            except (ValueError, OSError) as exc:
                self.send_json(413, {"error": {"message": str(exc)}})
                return
            record = model._record(self.command, split.path, split.query, self._headers(), raw)
            try:
                self._route(record, split.path, split.query, raw)
            except (BrokenPipeError, ConnectionResetError):
                record.outcome = "disconnected"
            finally:
                log_file.write(record)

        def _headers(self) -> dict[str, str]:
            return {
                name.lower(): _redact(name, value)
                for name, value in self.headers.items()
                if name.lower() not in SKIPPED_HEADERS
            }

        def _credential(self, query: str) -> str:
            names = ("Authorization", "x-api-key", "x-goog-api-key", "api-key")
            values = [self.headers.get(name, "") for name in names]
            values += parse_qs(query).get("key", [])
            return " ".join(values)

        def _route(self, record: LoggedRequest, path: str, query: str, raw: bytes) -> None:
            if self.command == "HEAD":
                self.send_bytes(200, b"", None)
                return
            if self.command == "GET":
                self.send_json(200, self._get_body(path))
                return
            if self.command != "POST":
                self.send_json(200, {})
                return
            if path.endswith("/messages/count_tokens"):
                self.send_json(200, {"input_tokens": _token_estimate(raw)})
            elif ":countTokens" in path:
                self.send_json(200, {"totalTokens": _token_estimate(raw)})
            elif ":embedContent" in path or ":batchEmbedContents" in path:
                self.send_json(200, {"embedding": {"values": [0.0] * 8}, "embeddings": [{"values": [0.0] * 8}]})
            elif (dialect := _dialect_for(self.command, path)) is not None:
                self._model_call(record, dialect, path, query, raw)
            else:
                self.send_json(200, {})

        def _get_body(self, path: str) -> Any:
            if path.rstrip("/").endswith("/models"):
                return _gemini_models() if "v1beta" in path else _model_list()
            if "/models/" in path:
                name = path.rsplit("/models/", 1)[1]
                return {
                    "id": name,
                    "object": "model",
                    "type": "model",
                    "display_name": name,
                    "owned_by": "anyagent-testkit",
                }
            return {}

        def _model_call(self, record: LoggedRequest, dialect: Dialect, path: str, query: str, raw: bytes) -> None:
            body = record.body if isinstance(record.body, dict) else {}
            model_hint = path.rsplit("/models/", 1)[1].split(":", 1)[0] if "/models/" in path else ""
            conversation = conversation_from(dialect, body, model_hint)
            if dialect is Dialect.GEMINI:
                conversation = attrs.evolve(conversation, stream=":streamGenerateContent" in path)
            record.dialect = dialect.value
            marker = model.bad_key_marker
            if marker and marker in self._credential(query).lower():
                record.reply = {"status": 401}
                record.outcome = "error"
                self.send_json(401, render_error(Fail(401, "Incorrect API key provided (fake model)"), dialect))
                return
            reply, side_call = model._choose(conversation)
            record.side_call = side_call
            tokens = _token_estimate(raw)
            headers = dict(reply.headers)
            if reply.failure is not None:
                record.reply = _summary(reply, [])
                record.outcome = "error"
                self.send_json(reply.failure.status, render_error(reply.failure, dialect), headers)
                return
            blocks = plan_blocks(reply, conversation, model.ids, model.slow_delay)
            record.reply = _summary(reply, blocks)
            if conversation.stream:
                events = list(render_stream(blocks, conversation, model.ids, tokens))
                self._stream(events, dialect, query, record, headers)
            elif self._pause(total_delay(blocks)):
                self.send_json(200, render_json(blocks, conversation, model.ids, tokens), headers)

        def _stream(
            self,
            events: list[SseEvent],
            dialect: Dialect,
            query: str,
            record: LoggedRequest,
            headers: dict[str, str] | None = None,
        ) -> None:
            if dialect is Dialect.GEMINI and "alt=sse" not in query:
                if self._pause(sum(event.delay for event in events)):
                    self.send_json(200, [event.data for event in events], headers)
                return
            self.start_sse(headers)
            for event in events:
                if not self._pause(event.delay):
                    record.outcome = "disconnected"
                    return
                self.send_sse(event.data, event.event)

        def _pause(self, seconds: float) -> bool:
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline:
                if self.server.stopping.is_set():
                    return False
                time.sleep(min(0.02, max(0.0, deadline - time.monotonic())))
            return not self.server.stopping.is_set()

    return Handler
