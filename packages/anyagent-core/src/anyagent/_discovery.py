"""Discovery: find each profile's executable without launching anything.

Order per profile: the env override ``ANYAGENT_<ID>_BIN``, ``PATH``, then the profile's extra
install dirs. Profiles without executables are in-process agents (the mock) and always present.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from ._installation import AgentInstallation, AgentProfile, DiscoveryReport, InstallationSource, MissingAgent
from ._types import DiagnosticInfo, DiagnosticLevel

__all__ = ["Discovery"]

IN_PROCESS = Path("<in-process>")


def _is_executable(path: Path) -> bool:
    try:
        return path.is_file() and os.access(path, os.X_OK)
    except OSError:
        return False


def _os_key() -> str:
    if sys.platform.startswith("win"):
        return "windows"
    if sys.platform == "darwin":
        return "darwin"
    return "linux"


def _expand(entry: str) -> Path:
    return Path(os.path.expandvars(entry)).expanduser()


class Discovery:
    """Scans for installed agents. Cheap to call repeatedly; ``prewarm`` is a no-op hook here."""

    def prewarm(self) -> None:
        """Start any slow part of the scan early."""

    async def scan(self, profiles: Iterable[AgentProfile]) -> DiscoveryReport:
        """Find every profile's executable; report installed and missing agents."""
        agents: list[AgentInstallation] = []
        missing: list[MissingAgent] = []
        diagnostics: list[DiagnosticInfo] = []
        path_dirs = [Path(p) for p in os.environ.get("PATH", "").split(os.pathsep) if p]
        for profile in profiles:
            found = self._find(profile, path_dirs, diagnostics)
            if isinstance(found, AgentInstallation):
                agents.append(found)
            else:
                missing.append(found)
        return DiscoveryReport(tuple(agents), tuple(missing), tuple(diagnostics))

    def _find(
        self, profile: AgentProfile, path_dirs: Sequence[Path], diagnostics: list[DiagnosticInfo]
    ) -> AgentInstallation | MissingAgent:
        if not profile.executables:
            return AgentInstallation(
                id=profile.id, name=profile.name, executable_path=IN_PROCESS, wire=profile.wire, args=profile.args
            )
        override = os.environ.get(profile.env_override)
        if override:
            candidate = _expand(override)
            if _is_executable(candidate):
                return self._installation(profile, candidate, InstallationSource.ENV_OVERRIDE)
            diagnostics.append(
                DiagnosticInfo(
                    f"{profile.env_override}={override} is not an executable file; searching elsewhere",
                    DiagnosticLevel.WARNING,
                    "env_override",
                )
            )
        searched: list[str] = []
        extra = [_expand(d) for key in ("any", _os_key()) for d in profile.extra_dirs.get(key, ())]
        for source, dirs in ((InstallationSource.PATH, path_dirs), (InstallationSource.KNOWN_LOCATION, extra)):
            for directory in dirs:
                if str(directory) in searched:
                    continue
                searched.append(str(directory))
                for name in profile.executables:
                    candidate = directory / name
                    if _is_executable(candidate):
                        return self._installation(profile, candidate, source)
        return MissingAgent(profile.id, profile.name, profile.install_hint, tuple(searched))

    def _installation(self, profile: AgentProfile, path: Path, source: InstallationSource) -> AgentInstallation:
        return AgentInstallation(
            id=profile.id,
            name=profile.name,
            executable_path=path,
            wire=profile.wire,
            args=profile.args,
            source=source,
        )
