"""opencode's catalog entry: where to find ``opencode``, how to launch its server, how to log in.

Verified against opencode 1.18.33 (the live tier's pin): ``opencode serve --hostname 127.0.0.1
--port <free>`` prints ``opencode server listening on http://127.0.0.1:<port>`` on stdout, and
``OPENCODE_SERVER_PASSWORD`` turns on HTTP Basic auth (user ``opencode``) for every route.
"""

from __future__ import annotations

from anyagent import AgentProfile, TerminalLogin

__all__ = ["LISTENING", "PROFILE", "SERVE_ARGS", "USERNAME"]

SERVE_ARGS: tuple[str, ...] = ("serve", "--hostname", "127.0.0.1")
"""What puts ``opencode`` in server mode on loopback (the adapter adds ``--port <free port>``)."""

LISTENING = r"opencode server listening on (http://127\.0\.0\.1:\d+)"
"""The stdout line the server prints once it accepts connections."""

USERNAME = "opencode"
"""The HTTP Basic user name the server expects with ``OPENCODE_SERVER_PASSWORD``."""

PROFILE = AgentProfile(
    id="opencode",
    name="opencode",
    wire="opencode",
    executables=("opencode",),
    args=SERVE_ARGS,
    login=(TerminalLogin(("opencode", "auth", "login"), "Log in to a model provider (or set its API-key variable)"),),
    install_hint="npm install -g opencode-ai (or: brew install sst/tap/opencode)",
    # opencode has no single config-home variable: it follows the XDG base dirs (config, data,
    # cache, state), so ``SessionOptions.config_home`` is refused with InvalidConfiguration.
    config_home_env=None,
    extra_dirs={
        "any": ("~/.opencode/bin", "~/.local/bin", "~/.bun/bin"),
        "windows": ("%APPDATA%\\npm",),
    },
    auth_error_hints=("API key", "Unauthorized", "401"),
    quirks={
        "xdg_dirs": [
            "XDG_CONFIG_HOME/opencode",
            "XDG_DATA_HOME/opencode",
            "XDG_CACHE_HOME/opencode",
            "XDG_STATE_HOME/opencode",
        ],
        "env": {"OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_SHARE": "1"},
    },
)
"""The catalog profile the plugin registers."""
