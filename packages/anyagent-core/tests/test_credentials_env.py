"""Which host variables reach an agent: ``SessionOptions.credentials``, ``env_allow``, ``env_deny`` and
``set_env``, checked in the real environment of a spawned fake agent (``/proc/PID/environ``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from linessupport import SPAWNED, LinesAdapter, agent

from anyagent import (
    AgentProfile,
    CredentialPolicy,
    EnvVarLogin,
    InvalidConfiguration,
    Runtime,
    SessionOptions,
    hookimpl,
    seam,
)
from anyagent.options import session_env

pytestmark = pytest.mark.anyio

HOST = {
    "LINES_API_KEY": "own-key",  # the lines agent's EnvVarLogin
    "LINES_HOME": "/tmp/lines-login",  # its config-home variable
    "LINES_SESSION_TOKEN": "own-extra",  # its credential_env
    "ANTHROPIC_API_KEY": "anthropic-key",
    "OPENAI_API_KEY": "openai-key",
    "OTHER_VENDOR_KEY": "other-key",  # only the catalog says this is a credential
    "OTHER_HOME": "/tmp/other-login",  # another agent's config-home variable
    "GITHUB_TOKEN": "gh-token",
    "AWS_SECRET_ACCESS_KEY": "aws-secret",
    "HARMLESS": "1",
}


class CredentialsPlugin:
    @hookimpl
    def anyagent_adapters(self) -> list[type[seam.Adapter]]:
        return [LinesAdapter]

    @hookimpl
    def anyagent_agents(self) -> list[AgentProfile]:
        return [
            AgentProfile(
                id="lines",
                name="Lines",
                wire="lines",
                executables=("lines-agent",),
                login=(EnvVarLogin("LINES_API_KEY"),),
                config_home_env="LINES_HOME",
                credential_env=("LINES_SESSION_*",),
            ),
            AgentProfile(
                id="other",
                name="Other",
                wire="lines",
                executables=("other-agent",),
                login=(EnvVarLogin("OTHER_VENDOR_KEY"),),
                config_home_env="OTHER_HOME",
            ),
        ]


def environ_of(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    return dict(entry.split("=", 1) for entry in raw.decode().split("\0") if "=" in entry)


async def spawned_env(tmp_path: Path, options: SessionOptions) -> dict[str, str]:
    async with Runtime(plugins=[CredentialsPlugin()]) as runtime:
        session, _events = await runtime.open(agent("normal"), options)
        async with session:
            return {k: v for k, v in environ_of(SPAWNED[-1]).items() if k in HOST or k == "EXTRA"}


@pytest.fixture
def host_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in HOST.items():
        monkeypatch.setenv(name, value)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/PID/environ")
@pytest.mark.usefixtures("host_env")
async def test_the_default_passes_the_host_environment(tmp_path: Path) -> None:
    assert await spawned_env(tmp_path, SessionOptions.in_dir(tmp_path)) == HOST


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/PID/environ")
@pytest.mark.usefixtures("host_env")
async def test_own_only_gives_the_agent_its_own_keys_and_nobody_elses(tmp_path: Path) -> None:
    options = SessionOptions.in_dir(tmp_path).credentials(CredentialPolicy.OWN_ONLY)
    assert await spawned_env(tmp_path, options) == {
        "LINES_API_KEY": "own-key",
        "LINES_HOME": "/tmp/lines-login",
        "LINES_SESSION_TOKEN": "own-extra",
        "HARMLESS": "1",
    }


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/PID/environ")
@pytest.mark.usefixtures("host_env")
async def test_allow_deny_and_set_env_refine_the_policy(tmp_path: Path) -> None:
    options = (
        SessionOptions.in_dir(tmp_path)
        .credentials(CredentialPolicy.OWN_ONLY)
        .env_allow("github_token")  # case-insensitive
        .env_deny("HARMLESS", "LINES_API_KEY")  # a deny reaches the agent's own key too
        .set_env("EXTRA", "from-the-app")
    )
    assert await spawned_env(tmp_path, options) == {
        "LINES_HOME": "/tmp/lines-login",
        "LINES_SESSION_TOKEN": "own-extra",
        "GITHUB_TOKEN": "gh-token",
        "EXTRA": "from-the-app",
    }


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/PID/environ")
@pytest.mark.usefixtures("host_env")
async def test_none_drops_every_credential_but_keeps_the_config_home(tmp_path: Path) -> None:
    options = SessionOptions.in_dir(tmp_path).credentials(CredentialPolicy.NONE).config_home(tmp_path / "login")
    assert await spawned_env(tmp_path, options) == {"LINES_HOME": str(tmp_path / "login"), "HARMLESS": "1"}


def test_session_env_is_pure_and_patterns_are_checked(tmp_path: Path) -> None:
    options = SessionOptions.in_dir(tmp_path).credentials(CredentialPolicy.OWN_ONLY)
    env = session_env({"A_API_KEY": "a", "B_API_KEY": "b", "PATH": "/bin"}, options, own=("A_API_KEY",))
    assert env == {"A_API_KEY": "a", "PATH": "/bin"}
    assert session_env({"A_API_KEY": "a"}, SessionOptions.in_dir(tmp_path)) == {"A_API_KEY": "a"}
    for bad in (lambda o: o.env_deny(), lambda o: o.env_allow(""), lambda o: o.set_env("A=B", "x")):
        with pytest.raises(InvalidConfiguration):
            bad(options)
    with pytest.raises(InvalidConfiguration):
        options.credentials("own_only")  # type: ignore[arg-type]
