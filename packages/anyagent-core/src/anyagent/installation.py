"""Installed agents, missing agents, the discovery report, and catalog profiles (agent facts as data)."""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

from ._frozen import _frozen_mapping, _shared_reprs, _tuple
from .errors import InvalidRequest, NotInstalled
from .values import JSON, DiagnosticInfo, EnvVarLogin, LoginMethod

__all__ = [
    "AgentInstallation",
    "AgentProfile",
    "DiscoveryReport",
    "InstallationSource",
    "MissingAgent",
]

_ID = re.compile(r"^[a-z0-9][a-z0-9._-]*$")


class InstallationSource(enum.Enum):
    """Where discovery found an executable."""

    ENV_OVERRIDE = "env_override"
    PATH = "path"
    LOGIN_SHELL_PATH = "login_shell_path"
    VERSION_MANAGER = "version_manager"
    KNOWN_LOCATION = "known_location"
    PINNED = "pinned"


@attrs.frozen(repr=False)
class MissingAgent:
    """A supported agent that is not installed: show ``install_hint``; ``searched`` lists every dir checked."""

    id: str
    name: str
    install_hint: str
    searched: tuple[str, ...] = attrs.field(default=(), converter=_tuple)


@attrs.frozen(repr=False)
class AgentInstallation:
    """An agent found on this machine (or pinned by hand) that ``Runtime.open`` can launch.

    ``wire`` names the adapter that speaks to it; None means "the catalog profile's wire for ``id``".
    ``upgrade`` names a richer runtime that is not installed, when only the base CLI was found.
    """

    id: str
    name: str
    executable_path: Path = attrs.field(converter=Path)
    wire: str | None = None
    args: tuple[str, ...] = attrs.field(default=(), converter=_tuple)
    source: InstallationSource = InstallationSource.PINNED
    upgrade: MissingAgent | None = None
    version: str | None = None

    @classmethod
    def at(cls, agent_id: str, path: str | Path) -> AgentInstallation:
        """Point at a specific binary of the catalog agent ``agent_id`` (skips discovery)."""
        if not isinstance(agent_id, str) or not agent_id:
            raise InvalidRequest("agent id must be a non-empty str")
        return cls(id=agent_id, name=agent_id, executable_path=Path(path).expanduser())

    @classmethod
    def acp(cls, name: str, path: str | Path, args: Iterable[str] = ()) -> AgentInstallation:
        """Any Agent Client Protocol agent not in the catalog: its executable and ACP-mode args."""
        if not isinstance(name, str) or not name:
            raise InvalidRequest("agent name must be a non-empty str")
        args = tuple(args)
        if not all(isinstance(arg, str) for arg in args):
            raise InvalidRequest("ACP args must be strings")
        return cls(id=name, name=name, executable_path=Path(path).expanduser(), wire="acp", args=args)


@attrs.frozen(repr=False)
class DiscoveryReport:
    """What ``Runtime.discover`` found: ``agents`` installed, ``missing`` ones with install hints."""

    agents: tuple[AgentInstallation, ...] = attrs.field(default=(), converter=_tuple)
    missing: tuple[MissingAgent, ...] = attrs.field(default=(), converter=_tuple)
    diagnostics: tuple[DiagnosticInfo, ...] = attrs.field(default=(), converter=_tuple)

    def get(self, agent_id: str) -> AgentInstallation | None:
        """The installed agent ``agent_id``, or None."""
        for agent in self.agents:
            if agent.id == agent_id:
                return agent
        return None

    def require(self, agent_id: str) -> AgentInstallation:
        """The installed agent ``agent_id``; raises ``NotInstalled`` (with the install hint) otherwise."""
        found = self.get(agent_id)
        if found is not None:
            return found
        for missing in self.missing:
            if missing.id == agent_id:
                raise NotInstalled(agent_id, f"{missing.name} is not installed: {missing.install_hint}")
        known = ", ".join(sorted({a.id for a in self.agents} | {m.id for m in self.missing})) or "none"
        raise NotInstalled(agent_id, f"no agent {agent_id!r} is known to the installed plugins (known agents: {known})")


def _os_dirs(value: Mapping[str, Iterable[str]] | None) -> Mapping[str, tuple[str, ...]]:
    return _frozen_mapping({key: tuple(dirs) for key, dirs in (value or {}).items()})


@attrs.frozen(repr=False)
class AgentProfile:
    """Everything the catalog knows about one agent, as data. Adapter packages register these.

    - ``id`` / ``name``: stable id (``"claude"``) and display name.
    - ``wire``: the adapter that speaks its protocol (``"claude"``, ``"acp"``, …).
    - ``executables``: names to look for; ``args``: what puts it in protocol mode.
    - ``login``: runnable login methods; ``install_hint``: what to tell a user who lacks it.
    - ``config_home_env``: the env var that moves its config (None: ``config_home`` is refused).
    - ``credential_env``: env vars (names or ``fnmatch`` patterns) holding its own credentials besides
      its ``EnvVarLogin`` names (``ANTHROPIC_AUTH_TOKEN``…), kept by ``CredentialPolicy.OWN_ONLY``.
    - ``extra_dirs``: install dirs per OS (``"linux"``, ``"darwin"``, ``"windows"``, ``"any"``),
      ``~`` meaning the home directory, ``%VAR%`` a Windows environment variable.
    - ``upgrade``: a richer separately-installed runtime of the same agent, preferred when found.
    - ``auth_error_hints``: text fragments that mean "logged out" in its errors.
    - ``quirks``: free-form verified facts its adapter reads.
    - ``modes``: the agent's own ``mode`` ids → the portable mode names (``default``,
      ``accept-edits``, ``plan``, ``bypass-permissions``; ``ask`` is ``default``'s other
      spelling), so ``configure("mode", "accept-edits")`` works on every agent that has such a
      mode (``anyagent.toolkit.mode_aliases``).
    """

    id: str = attrs.field()
    name: str
    wire: str
    executables: tuple[str, ...] = attrs.field(converter=_tuple)
    args: tuple[str, ...] = attrs.field(default=(), converter=_tuple)
    login: tuple[LoginMethod, ...] = attrs.field(default=(), converter=_tuple)
    install_hint: str = ""
    config_home_env: str | None = None
    extra_dirs: Mapping[str, tuple[str, ...]] = attrs.field(default=None, converter=_os_dirs)
    upgrade: AgentProfile | None = None
    auth_error_hints: tuple[str, ...] = attrs.field(default=(), converter=_tuple)
    quirks: Mapping[str, JSON] = attrs.field(default=None, converter=_frozen_mapping)
    credential_env: tuple[str, ...] = attrs.field(default=(), converter=_tuple)
    modes: Mapping[str, str] = attrs.field(default=None, converter=_frozen_mapping)

    @id.validator
    def _check_id(self, _attribute: Any, value: str) -> None:
        if not _ID.match(value):
            raise ValueError(f"profile id {value!r} must be lowercase letters, digits, '.', '_' or '-'")

    @property
    def own_credential_env(self) -> tuple[str, ...]:
        """The variables (names or patterns) holding its own credentials: ``EnvVarLogin`` names, then
        ``credential_env`` (its ``config_home_env`` is separate)."""
        logins = tuple(method.name for method in self.login if isinstance(method, EnvVarLogin))
        return (*logins, *self.credential_env)

    @property
    def env_override(self) -> str:
        """The env var that pins this agent's binary: ``ANYAGENT_<ID>_BIN``."""
        return "ANYAGENT_" + re.sub(r"[^A-Z0-9]", "_", self.id.upper()) + "_BIN"


_shared_reprs(globals())  # the value classes above say repr=False: one shared __repr__
