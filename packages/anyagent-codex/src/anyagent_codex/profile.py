"""Codex's catalog entry: where to find ``codex``, how to launch its app server, how to log in.

Verified against ``@openai/codex`` 0.171.0 (offline against a loopback model) and the logged-in
0.147.0 recordings: ``codex app-server`` speaks JSON-RPC lines on stdio; ``CODEX_HOME`` moves its
config and logins; ``OPENAI_API_KEY`` in the environment does not log the app server in (the
account stays logged out), so the only login offered is ``codex login`` (which can also take an
API key: ``codex login --with-api-key``).
"""

from __future__ import annotations

from anyagent import AgentProfile, TerminalLogin

__all__ = ["ARGS", "LOGIN", "PROFILE"]

ARGS: tuple[str, ...] = ("app-server",)
"""What puts ``codex`` into its JSON-RPC app-server mode."""

LOGIN = (
    TerminalLogin(("codex", "login"), "Log in to Codex (ChatGPT account or an API key)"),
    TerminalLogin(("codex", "login", "--with-api-key"), "Log in to Codex with an OpenAI API key (read from stdin)"),
)
"""How a logged-out user logs in; anyagent only shows these, it never runs them."""

PROFILE = AgentProfile(
    id="codex",
    name="Codex",
    wire="codex",
    executables=("codex",),
    args=ARGS,
    login=LOGIN,
    install_hint="npm install -g @openai/codex",
    config_home_env="CODEX_HOME",
    credential_env=("CODEX_API_KEY", "OPENAI_API_KEY"),
    extra_dirs={"windows": ("%APPDATA%\\npm",)},
    auth_error_hints=("401 Unauthorized", "unauthorized", "Not logged in", "invalid_api_key"),
    # portable mode names for the approval policy (``untrusted`` asks more than codex's default
    # and has none); ``never`` stops asking, the sandbox still applies; ``plan`` is Plan mode
    modes={"on-request": "default", "never": "bypass-permissions", "plan": "plan"},
)
"""The catalog profile the plugin registers (preferred over the ``codex-acp`` bridge, see README)."""
