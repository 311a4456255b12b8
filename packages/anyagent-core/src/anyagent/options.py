"""``SessionOptions`` (an immutable builder), MCP servers, permission modes, rollback scopes."""

from __future__ import annotations

import enum
import fnmatch
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Union

import attrs

from ._frozen import _frozen_mapping, _shared_reprs, _tuple
from .errors import InvalidConfiguration
from .types import ConfigValue

__all__ = [
    "CREDENTIAL_ENV_PATTERNS",
    "CredentialPolicy",
    "McpHttp",
    "McpServer",
    "McpSse",
    "McpStdio",
    "PermissionMode",
    "RollbackScope",
    "SessionOptions",
    "session_env",
]


class PermissionMode(enum.Enum):
    """``ASK`` forwards permission requests; ``AUTO_APPROVE`` allows each once without asking."""

    ASK = "ask"
    AUTO_APPROVE = "auto_approve"


class RollbackScope(enum.Enum):
    """What ``session.rollback`` rewinds: the conversation, or the conversation and the files."""

    CONVERSATION = "conversation"
    CONVERSATION_AND_FILES = "conversation_and_files"


@attrs.frozen(repr=False)
class McpStdio:
    """An MCP server the agent launches: ``command args`` with ``env``."""

    name: str
    command: str
    args: tuple[str, ...] = attrs.field(default=(), converter=_tuple)
    env: Mapping[str, str] = attrs.field(default=None, converter=_frozen_mapping)

    transport = "stdio"


@attrs.frozen(repr=False)
class McpHttp:
    """An MCP server over streamable HTTP at ``url``."""

    name: str
    url: str
    headers: Mapping[str, str] = attrs.field(default=None, converter=_frozen_mapping)

    transport = "http"

    def with_header(self, key: str, value: str) -> McpHttp:
        """A copy with one more header."""
        return attrs.evolve(self, headers={**self.headers, key: value})


@attrs.frozen(repr=False)
class McpSse:
    """An MCP server over server-sent events at ``url``."""

    name: str
    url: str
    headers: Mapping[str, str] = attrs.field(default=None, converter=_frozen_mapping)

    transport = "sse"

    def with_header(self, key: str, value: str) -> McpSse:
        """A copy with one more header."""
        return attrs.evolve(self, headers={**self.headers, key: value})


McpServerSpec = Union[McpStdio, McpHttp, McpSse]


class McpServer:
    """Builders for the MCP servers an app hands the agent: ``stdio``, ``http``, ``sse``."""

    @staticmethod
    def stdio(name: str, command: str, args: Iterable[str] = (), env: Mapping[str, str] | None = None) -> McpStdio:
        """A server the agent launches as a subprocess."""
        return McpStdio(name, command, tuple(args), env)

    @staticmethod
    def http(name: str, url: str) -> McpHttp:
        """A streamable-HTTP server; add headers with ``.with_header(k, v)``."""
        return McpHttp(name, url)

    @staticmethod
    def sse(name: str, url: str) -> McpSse:
        """A server-sent-events server; add headers with ``.with_header(k, v)``."""
        return McpSse(name, url)


CREDENTIAL_ENV_PATTERNS: tuple[str, ...] = (
    "*API_KEY*",
    "*APIKEY*",
    "*_TOKEN",
    "*_TOKEN_*",
    "*SECRET*",
    "*PASSWORD*",
    "*PASSWD*",
    "*CREDENTIAL*",
    "*_PRIVATE_KEY",
    "*_ACCESS_KEY",
    "*_ACCESS_KEY_ID",
)
"""Names (``fnmatch`` patterns, matched case-insensitively) that ``CredentialPolicy`` treats as
credentials, besides every catalog agent's ``EnvVarLogin`` names, ``credential_env`` and
``config_home_env``: ``ANTHROPIC_API_KEY``, ``GITHUB_TOKEN``, ``AWS_SECRET_ACCESS_KEY``, ``NPM_TOKEN``…"""


class CredentialPolicy(enum.Enum):
    """Which credential variables of the host environment an agent (and everything it runs) sees.

    - ``INHERIT`` (the default): the host environment as it is, every vendor's keys included.
    - ``OWN_ONLY``: credential variables are dropped except the agent's own (its profile's
      ``EnvVarLogin`` names, ``credential_env`` and ``config_home_env``).
    - ``NONE``: every credential variable is dropped, the agent's own too (it uses the login it stored).

    A credential variable is one named by ``CREDENTIAL_ENV_PATTERNS`` or by any catalog profile.
    ``SessionOptions.env_allow`` keeps more; ``env_deny`` drops more.
    """

    INHERIT = "inherit"
    OWN_ONLY = "own_only"
    NONE = "none"


def _env_patterns(name: str, patterns: Iterable[str]) -> tuple[str, ...]:
    if isinstance(patterns, str):
        patterns = (patterns,)
    result = tuple(patterns)
    if not result or not all(isinstance(p, str) and p and "=" not in p and "\0" not in p for p in result):
        raise InvalidConfiguration(f"{name} takes one or more non-empty variable names or fnmatch patterns")
    return result


def _env_key(name: str) -> str:
    return name.upper()


def _matches(name: str, patterns: Iterable[str]) -> bool:
    key = _env_key(name)
    return any(fnmatch.fnmatchcase(key, _env_key(pattern)) for pattern in patterns)


def _no_nul(what: str, text: str | Path) -> None:
    """A NUL byte cannot reach an agent (argv, environment and paths end at one): refuse it here."""
    if "\0" in str(text):
        raise InvalidConfiguration(f"{what} contains a NUL byte")


def _seconds(name: str, value: float | None, *, allow_none: bool = False) -> float | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise InvalidConfiguration(f"{name} must be a positive number of seconds, got {value!r}")
    return float(value)


@attrs.frozen(repr=False)
class SessionOptions:
    """Everything ``open`` needs before the agent starts. Every builder returns a new value.

    ``SessionOptions.in_dir(".").configure("model", "sonnet").permission_mode(PermissionMode.ASK)``
    """

    cwd: Path
    configuration: Mapping[str, ConfigValue] = attrs.field(default=None, converter=_frozen_mapping)
    resume_token: str | None = None
    fork_token: str | None = None
    fork_at: str | None = None
    mcp_servers: tuple[McpServerSpec, ...] = attrs.field(default=(), converter=_tuple)
    permissions: PermissionMode = PermissionMode.ASK
    config_home_dir: Path | None = None
    quiet_window_seconds: float | None = None
    stall_after_seconds: float = 120.0
    record_wire_path: Path | None = None
    no_tools: bool = False
    credential_policy: CredentialPolicy = CredentialPolicy.INHERIT
    env_allowed: tuple[str, ...] = attrs.field(default=(), converter=_tuple)
    env_denied: tuple[str, ...] = attrs.field(default=(), converter=_tuple)
    env_set: Mapping[str, str] = attrs.field(default=None, converter=_frozen_mapping, repr=False)

    @classmethod
    def in_dir(cls, path: str | Path) -> SessionOptions:
        """Options for an agent working in ``path`` (required; resolved to an absolute path)."""
        if not isinstance(path, (str, Path)) or str(path) == "":
            raise InvalidConfiguration("in_dir needs a directory path")
        _no_nul("in_dir", path)
        return cls(cwd=Path(path).expanduser().absolute())

    def configure(self, option_id: str, value: ConfigValue) -> SessionOptions:
        """Set a config option before the first turn (validated against the agent's options at open)."""
        if not isinstance(option_id, str) or not option_id:
            raise InvalidConfiguration("config option id must be a non-empty str")
        if not isinstance(value, (str, bool)):
            raise InvalidConfiguration(f"config value for {option_id!r} must be a str or bool")
        _no_nul("config option id", option_id)
        if isinstance(value, str):
            _no_nul(f"config value for {option_id!r}", value)
        return attrs.evolve(self, configuration={**self.configuration, option_id: value})

    def resume(self, token: str) -> SessionOptions:
        """Reopen the conversation behind ``token`` (from ``session.info().resume_token``)."""
        if not isinstance(token, str) or not token:
            raise InvalidConfiguration("resume token must be a non-empty str")
        _no_nul("resume token", token)
        return attrs.evolve(self, resume_token=token, fork_token=None, fork_at=None)

    def fork_from(self, token: str, at: str | None = None) -> SessionOptions:
        """Branch a new session off ``token``'s conversation, at message ``at`` or at the end."""
        if not isinstance(token, str) or not token:
            raise InvalidConfiguration("fork token must be a non-empty str")
        _no_nul("fork token", token)
        if at is not None:
            _no_nul("fork point", at)
        return attrs.evolve(self, fork_token=token, fork_at=at, resume_token=None)

    def mcp_server(self, server: McpServerSpec) -> SessionOptions:
        """Hand the agent one of your MCP servers for this session."""
        if not isinstance(server, (McpStdio, McpHttp, McpSse)):
            raise InvalidConfiguration("mcp_server takes McpServer.stdio/http/sse(...)")
        if any(existing.name == server.name for existing in self.mcp_servers):
            raise InvalidConfiguration(f"MCP server {server.name!r} is already configured")
        return attrs.evolve(self, mcp_servers=(*self.mcp_servers, server))

    def permission_mode(self, mode: PermissionMode) -> SessionOptions:
        """``ASK`` (forward requests, the default) or ``AUTO_APPROVE``."""
        if not isinstance(mode, PermissionMode):
            raise InvalidConfiguration("permission_mode takes a PermissionMode")
        return attrs.evolve(self, permissions=mode)

    def config_home(self, path: str | Path) -> SessionOptions:
        """A separate config directory, for several logins of one agent."""
        _no_nul("config_home", path)
        return attrs.evolve(self, config_home_dir=Path(path).expanduser().absolute())

    def quiet_window(self, seconds: float) -> SessionOptions:
        """Silence after which a turn's completion is inferred, on wires that do not say it."""
        return attrs.evolve(self, quiet_window_seconds=_seconds("quiet_window", seconds))

    def stall_after(self, seconds: float) -> SessionOptions:
        """Silence before a stall ``Diagnostic`` (default 120 s). Never ends the turn."""
        value = _seconds("stall_after", seconds)
        assert value is not None
        return attrs.evolve(self, stall_after_seconds=value)

    def record_wire(self, path: str | Path) -> SessionOptions:
        """Tee every raw frame, both directions, to a JSONL file (0600). The MCP servers' env and header
        values are written as ``<redacted>`` by the adapters that pass them on the wire; everything
        else is unredacted: treat the file as sensitive."""
        _no_nul("record_wire", path)
        return attrs.evolve(self, record_wire_path=Path(path).expanduser().absolute())

    def without_tools(self) -> SessionOptions:
        """Launch with tools off where the wire allows (used by ``generate``)."""
        return attrs.evolve(self, no_tools=True)

    def credentials(self, policy: CredentialPolicy) -> SessionOptions:
        """Which credential variables of the host environment the agent sees (default ``INHERIT``).

        ``CredentialPolicy.OWN_ONLY`` gives the agent only its own keys; the same filtered environment
        reaches its ACP terminal commands and whatever it spawns.
        """
        if not isinstance(policy, CredentialPolicy):
            raise InvalidConfiguration("credentials takes a CredentialPolicy")
        return attrs.evolve(self, credential_policy=policy)

    def env_deny(self, *patterns: str) -> SessionOptions:
        """Drop host variables matching these names or ``fnmatch`` patterns (case-insensitive), the
        agent's own included (``env_deny("ANTHROPIC_API_KEY")`` makes claude use its stored login)."""
        return attrs.evolve(self, env_denied=(*self.env_denied, *_env_patterns("env_deny", patterns)))

    def env_allow(self, *patterns: str) -> SessionOptions:
        """Keep host variables matching these names or patterns whatever the policy or ``env_deny``
        says (``credentials(OWN_ONLY).env_allow("GITHUB_TOKEN")`` for an agent that runs ``gh``)."""
        return attrs.evolve(self, env_allowed=(*self.env_allowed, *_env_patterns("env_allow", patterns)))

    def set_env(self, name: str, value: str) -> SessionOptions:
        """Set ``name`` for this agent only (after every filter): a key from your own store, say.
        Left out of ``repr``; ``serialize`` does include it, so do not log serialized options."""
        if not isinstance(name, str) or not name or "=" in name or "\0" in name:
            raise InvalidConfiguration("set_env needs a variable name without '=' or NUL")
        if not isinstance(value, str) or "\0" in value:
            raise InvalidConfiguration(f"set_env value for {name!r} must be a str without NUL")
        return attrs.evolve(self, env_set={**self.env_set, name: value})


def session_env(
    environ: Mapping[str, str],
    options: SessionOptions,
    own: Iterable[str] = (),
    home: str | None = None,
    others: Iterable[str] = (),
) -> dict[str, str]:
    """The environment one agent is launched with: ``environ`` filtered by ``options``.

    Precedence, highest first: ``env_allow`` keeps; ``env_deny`` drops; the credential policy drops
    credential variables (``CREDENTIAL_ENV_PATTERNS`` and ``others``, the whole catalog's) except the
    agent's config-home variable ``home`` and, for ``OWN_ONLY``, its ``own`` credential variables.
    ``set_env`` values are applied last.
    """
    own, others = (*own, *((home,) if home else ())), tuple(others)
    policy = options.credential_policy
    env: dict[str, str] = {}
    for name, value in environ.items():
        if not _matches(name, options.env_allowed):
            if _matches(name, options.env_denied):
                continue
            if policy is not CredentialPolicy.INHERIT and (
                _matches(name, CREDENTIAL_ENV_PATTERNS) or _matches(name, others)
            ):
                keep = own if policy is CredentialPolicy.OWN_ONLY else ((home,) if home else ())
                if not _matches(name, keep):
                    continue
        env[name] = value
    env.update(options.env_set)
    return env


_shared_reprs(globals())  # the value classes above say repr=False: one shared __repr__
