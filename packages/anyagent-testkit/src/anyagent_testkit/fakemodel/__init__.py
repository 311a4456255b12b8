"""The loopback fake model: one HTTP server on 127.0.0.1 that speaks what the agent CLIs call.

Anthropic Messages (``/v1/messages``, streaming and not, ``count_tokens``, ``/v1/models``), OpenAI
Responses (``/v1/responses``), OpenAI Chat Completions (``/v1/chat/completions``), and Gemini
(``:streamGenerateContent``, ``:generateContent``, ``:countTokens``). Every request is logged.

Scripted two ways:

* keywords at the start of a line in the newest user text — ``WRITE <path> <text>``,
  ``RUN <command>``, ``SLOW [n]``, ``THINK``, ``FAIL <status>``; anything else gets a deterministic
  echo, and a tool result gets a final text (see ``anyagent_testkit.fakemodel._script``);
* a queue of ``Reply`` values from Python, consumed one per main request before the keywords;
* a ``responder``: a function of the ``Conversation`` asked first on every main request; its
  ``Reply`` wins, None passes the request on to the queue and the keywords. It answers by what a
  request says, not by arrival order (a subagent's request racing its parent's).

Side calls (no tools offered, structured output, tiny ``max_tokens``, a system prompt about
titles/summaries/classification/routing) never consume the queue, never call tools and never act
on keywords: they get JSON filling the requested schema, a title, or "OK".

A credential containing ``bad`` (``bad_key_marker``) gets HTTP 401 in the API's error shape.

::

    async with FakeModel(script=[Reply.text("hello")]) as fm:     # or: with FakeModel() as fm
        env["ANTHROPIC_BASE_URL"] = fm.url
        ...
        assert fm.model_calls()[0].reply["text"] == "hello"

Command line: ``python -m anyagent_testkit.fakemodel --port 0 --port-file F --log L [--script S.json]``.
"""

from __future__ import annotations

import collections
import json
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import anyio

from .._httpserver import LoopbackServer
from ._conversation import Conversation, Dialect, ToolSpec, conversation_from
from ._render import Ids
from ._script import (
    DEFAULT_WRITE_TEXT,
    ECHO_PREFIX,
    TOOL_DONE_PREFIX,
    Fail,
    Reply,
    Slow,
    Text,
    Thinking,
    ToolCall,
    ToolIntent,
    decide,
    reply_from_json,
    resolve_tool,
    side_reply,
)
from ._server import LoggedRequest, make_handler

__all__ = [
    "DEFAULT_WRITE_TEXT",
    "ECHO_PREFIX",
    "TOOL_DONE_PREFIX",
    "Conversation",
    "Dialect",
    "Fail",
    "FakeModel",
    "LoggedRequest",
    "Reply",
    "Slow",
    "Text",
    "Thinking",
    "ToolCall",
    "ToolIntent",
    "ToolSpec",
    "conversation_from",
    "decide",
    "reply_from_json",
    "resolve_tool",
]


class FakeModel:
    """A scripted model server on ``127.0.0.1:port`` (0 picks a free port).

    ``script``: replies for the next main requests, in order (then the keywords take over).
    ``log``: a JSONL file that gets one line per request. ``slow_delay``: seconds between ``SLOW``
    chunks. ``bad_key_marker``: a credential containing it gets 401 (None turns that off).
    ``responder``: asked first on every main request (see the module docstring); settable later.
    Start with ``with``/``async with`` or ``start()``/``close()``; it runs on threads, so it works
    under asyncio, trio, and plain synchronous tests alike.
    """

    def __init__(
        self,
        script: Iterable[Reply] = (),
        *,
        log: str | Path | None = None,
        slow_delay: float = 0.25,
        port: int = 0,
        bad_key_marker: str | None = "bad",
        responder: Callable[[Conversation], Reply | None] | None = None,
    ) -> None:
        self.responder = responder
        self.slow_delay = slow_delay
        self.bad_key_marker = bad_key_marker.lower() if bad_key_marker else None
        self.ids = Ids()
        self.log_path = Path(log) if log is not None else None
        self._script: collections.deque[Reply] = collections.deque(script)
        self._records: list[LoggedRequest] = []
        self._lock = threading.Lock()
        self._started = time.monotonic()
        self._server = LoopbackServer(make_handler(self, self.log_path), port)

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> FakeModel:
        """Begin serving on a background thread."""
        self._started = time.monotonic()
        self._server.start("fake-model")
        return self

    def close(self) -> None:
        """Stop serving; open streams are cut. Idempotent."""
        self._server.close()

    def __enter__(self) -> FakeModel:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> FakeModel:
        return self.start()

    async def __aexit__(self, *exc: object) -> None:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(self.close)

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>`` — the base URL to give a CLI (add ``/v1`` where it wants one)."""
        return self._server.url

    @property
    def port(self) -> int:
        """The bound port."""
        return self._server.port

    # -- scripting -----------------------------------------------------------------------------

    def queue(self, *replies: Reply) -> None:
        """Append ``replies`` to the script."""
        with self._lock:
            self._script.extend(replies)

    @property
    def pending(self) -> int:
        """How many scripted replies are still queued."""
        with self._lock:
            return len(self._script)

    def _choose(self, conversation: Conversation) -> tuple[Reply, str | None]:
        """The reply for one model request and the side-call reason (if it is one)."""
        reason = conversation.side_call
        if reason is not None:
            return side_reply(conversation), reason
        responder = self.responder
        answer = responder(conversation) if responder is not None else None
        if answer is not None:
            return answer, None
        with self._lock:
            scripted = self._script.popleft() if self._script else None
        return (scripted if scripted is not None else decide(conversation)), None

    # -- records -------------------------------------------------------------------------------

    def _record(self, method: str, path: str, query: str, headers: dict[str, str], raw: bytes) -> LoggedRequest:
        body: Any
        try:
            body = _json_or_text(raw)
        except UnicodeDecodeError:
            body = f"<{len(raw)} undecodable bytes>"
        with self._lock:
            record = LoggedRequest(
                len(self._records) + 1, round(time.monotonic() - self._started, 4), method, path, query, headers, body
            )
            self._records.append(record)
        return record

    @property
    def requests(self) -> list[LoggedRequest]:
        """Every request so far, in arrival order."""
        with self._lock:
            return list(self._records)

    def model_calls(self) -> list[LoggedRequest]:
        """The main model requests (not side calls, not token counts or model lists)."""
        return [record for record in self.requests if record.is_model_call]

    def wait_for_calls(self, count: int, timeout: float = 30.0) -> list[LoggedRequest]:
        """Block until ``count`` main model requests have been answered (TimeoutError otherwise)."""
        deadline = time.monotonic() + timeout
        while True:
            calls = self.model_calls()
            if len(calls) >= count:
                return calls
            if time.monotonic() >= deadline:
                raise TimeoutError(f"expected {count} model calls within {timeout}s, got {len(calls)}")
            time.sleep(0.02)


def _json_or_text(raw: bytes) -> Any:
    if not raw:
        return None
    text = raw.decode("utf-8")
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text[:20000]
