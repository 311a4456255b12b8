"""The one exception tree of anyagent.

Every failure a caller can see is an ``AgentError``; match on the class, never on the message::

    AgentError
    ├── NotInstalled            report.require(id) for an agent that is not on this machine
    ├── SpawnFailed             the agent's executable would not start
    ├── AuthRequired            logged out; ``.login`` holds runnable LoginMethods to show
    ├── HandshakeTimeout        launch plus handshake took longer than 30 s
    ├── UnsupportedFeature      the call needs a capability this connection lacks
    ├── InvalidConfiguration    unknown option id, value not offered, isolation not honourable
    ├── InvalidRequest          answering a closed request, dequeueing a started prompt, bad argument
    ├── ResumeFailed            the resume or fork token did not resolve
    ├── SessionBusy             rollback or compact while a turn is running
    ├── ProtocolFailed          the wire misbehaved (garbage, an over-long line, a broken peer)
    ├── ProcessExited           the agent died; ``.status`` and ``.stderr`` (its tail)
    └── SessionClosed           a call after close, or the session ended underneath the caller
"""

from __future__ import annotations

from collections.abc import Sequence

from .values import LoginMethod

__all__ = [
    "AgentError",
    "AuthRequired",
    "HandshakeTimeout",
    "InvalidConfiguration",
    "InvalidRequest",
    "NotInstalled",
    "ProcessExited",
    "ProtocolFailed",
    "ResumeFailed",
    "SessionBusy",
    "SessionClosed",
    "SpawnFailed",
    "UnsupportedFeature",
]


class AgentError(Exception):
    """Base of every anyagent failure. ``message`` is the human-readable text."""

    def __init__(self, message: str = "") -> None:
        super().__init__(message)
        self.message = message

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r})"


class NotInstalled(AgentError):
    """The agent ``agent_id`` was asked for but discovery did not find it."""

    def __init__(self, agent_id: str, message: str | None = None) -> None:
        super().__init__(message or f"agent {agent_id!r} is not installed")
        self.agent_id = agent_id


class SpawnFailed(AgentError):
    """The agent's executable could not be started (missing, not executable, exec error)."""


class AuthRequired(AgentError):
    """The agent is logged out. Show ``login`` (runnable methods) to the user; never drive it."""

    def __init__(self, login: Sequence[LoginMethod] = (), message: str = "the agent needs a login") -> None:
        super().__init__(message)
        self.login: tuple[LoginMethod, ...] = tuple(login)


class HandshakeTimeout(AgentError):
    """Launching the agent and completing its handshake took longer than the bound (30 s)."""


class UnsupportedFeature(AgentError):
    """The call needs a capability this agent does not report on this connection."""


class InvalidConfiguration(AgentError):
    """An option id or value was not offered, or an isolation request cannot be honoured."""


class InvalidRequest(AgentError):
    """A call named something that is not open (request, prompt) or passed a malformed argument."""


class ResumeFailed(AgentError):
    """A resume or fork token did not resolve to a conversation the agent knows."""


class SessionBusy(AgentError):
    """The call needs an idle session (rollback, compact) but a turn is running."""


class ProtocolFailed(AgentError):
    """The agent's wire misbehaved: unparseable frames, an over-long line, a broken peer."""


class ProcessExited(AgentError):
    """The agent's process ended. ``status`` is its exit status, ``stderr`` the tail of its stderr."""

    def __init__(self, status: str, stderr: str = "", message: str | None = None) -> None:
        text = message or f"the agent exited ({status})"
        if stderr and message is None:
            text = f"{text}: {stderr.strip().splitlines()[-1] if stderr.strip() else ''}"
        super().__init__(text)
        self.status = status
        self.stderr = stderr


class SessionClosed(AgentError):
    """The session is closed: by ``close()``, by a consumer that fell behind, or by the agent going away."""
