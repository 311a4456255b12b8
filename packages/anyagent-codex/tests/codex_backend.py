"""A ChatGPT login for the live tier, offline: an ``auth.json`` with unsigned tokens (codex reads
their claims, it does not verify them) and a loopback stand-in for the ChatGPT backend that
answers ``GET …/wham/usage`` with a usage payload in the backend's shape (``RateLimitStatusPayload``:
windows in seconds, ``reset_at`` in epoch seconds). Point codex at it with ``chatgpt_base_url``."""

from __future__ import annotations

import base64
import json
import threading
import time
from pathlib import Path
from typing import Any

from anyagent_testkit._httpserver import LoopbackServer, RequestHandler

__all__ = ["USAGE", "ChatgptBackend", "write_chatgpt_login"]

USAGE: dict[str, Any] = {
    "plan_type": "plus",
    "rate_limit": {
        "allowed": True,
        "limit_reached": False,
        "primary_window": {
            "used_percent": 42,
            "limit_window_seconds": 5 * 3600,
            "reset_after_seconds": 600,
            "reset_at": 1_900_000_000,
        },
        "secondary_window": {
            "used_percent": 7,
            "limit_window_seconds": 7 * 86400,
            "reset_after_seconds": 6000,
            "reset_at": 1_900_604_800,
        },
    },
    "credits": None,
}


def _b64(value: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()


def write_chatgpt_login(codex_home: Path, backend_url: str, plan: str = "plus") -> None:
    """Log ``codex_home`` in as a ChatGPT ``plan`` account (tokens valid 30 days, stored in a file)
    whose backend is ``backend_url``."""
    now = int(time.time())
    claims = {
        "email": "user@example.com",
        "iat": now,
        "exp": now + 30 * 86400,
        "https://api.openai.com/auth": {"chatgpt_plan_type": plan, "chatgpt_account_id": "account-fake"},
    }
    token = ".".join((_b64({"alg": "none", "typ": "JWT"}), _b64(claims), _b64({})))
    auth = {
        "OPENAI_API_KEY": None,
        "auth_mode": "chatgpt",
        "tokens": {"id_token": token, "access_token": token, "refresh_token": "fake", "account_id": "account-fake"},
        "last_refresh": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)),
    }
    (codex_home / "auth.json").write_text(json.dumps(auth), encoding="utf-8")
    config = codex_home / "config.toml"
    settings = f'chatgpt_base_url = "{backend_url}/backend-api"\ncli_auth_credentials_store = "file"\n'
    config.write_text(settings + config.read_text(encoding="utf-8"), encoding="utf-8")


class ChatgptBackend:
    """``with ChatgptBackend() as backend:`` serves ``USAGE`` on ``GET …/wham/usage`` (404 for the
    rest) and keeps the paths asked (``paths``) and their bearer tokens (``tokens``)."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        self.tokens: list[str] = []
        self._lock = threading.Lock()
        self._server = LoopbackServer(_handler(self))

    @property
    def url(self) -> str:
        return self._server.url

    def __enter__(self) -> ChatgptBackend:
        self._server.start("chatgpt-backend")
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.close()

    def seen(self, path: str, token: str) -> None:
        with self._lock:
            self.paths.append(path)
            self.tokens.append(token)


def _handler(backend: ChatgptBackend) -> type[RequestHandler]:
    class Handler(RequestHandler):
        def do_GET(self) -> None:
            backend.seen(self.path, self.headers.get("Authorization", ""))
            if self.path.split("?", 1)[0].endswith("/wham/usage"):
                self.send_json(200, USAGE)
            else:
                self.send_json(404, {"detail": "not served by the test backend"})

    return Handler
