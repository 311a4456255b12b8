"""Antigravity's catalog entry: the headless ``agy`` CLI, and Google's ACP server as its upgrade.

Everything here is data. What the recordings of agy 1.1.x in ``tests/recordings/`` show is marked
*recorded*; what only the spec or the Rust original says is marked *unverified* (agy cannot be
installed on the machine this package was written on).
"""

from __future__ import annotations

from anyagent import AgentProfile, TerminalLogin

__all__ = [
    "AUTH_ERROR_HINTS",
    "BASE_ARGS",
    "LOGIN",
    "PROFILE",
    "SERVER",
    "SERVER_SETTINGS",
    "SKIP_PERMISSIONS",
]

BASE_ARGS: tuple[str, ...] = ("--input-format=stream-json", "--output-format=stream-json")
"""What puts ``agy`` into its headless stream-json mode (recorded: every ``_meta.cmd``)."""

SKIP_PERMISSIONS = "--dangerously-skip-permissions"
"""``PermissionMode.AUTO_APPROVE``: agy runs every tool without asking (recorded: 04-tool-skip,
where ``init.permission_mode`` turns from ``request-review`` to ``always-proceed``)."""

AUTH_ERROR_HINTS: tuple[str, ...] = ("authentication required", "authentication failed")
"""Logged out: agy's ``result`` error ("authentication failed or timed out") and its stderr
("Error: authentication required. Run 'agy' to log in, then retry.") — recorded: 10-logged-out."""

LOGIN = (TerminalLogin(("agy",), "Run `agy` once in a terminal to log in with Google, then retry"),)
"""How a logged-out user logs in: agy's own TUI (what its logged-out stderr tells the user to do)."""

SERVER_SETTINGS = "~/.gemini/antigravity-acp/settings.json"
"""The ACP server's settings file; ``auth.type`` set there makes the ``authenticate`` on open
unnecessary (recorded: the server's own error text in acp-01-handshake). Read, never written."""

SERVER = AgentProfile(
    id="antigravity-acp",
    name="Antigravity (ACP server)",
    wire="acp",
    # the registry's archive unpacks to agy_acp_server.par (unverified: from the Rust catalog)
    executables=("agy_acp_server.par", "antigravity-acp"),
    login=LOGIN,
    install_hint=(
        "download `antigravity-acp` from the ACP registry "
        "(https://github.com/agentclientprotocol/registry/blob/main/antigravity-acp/agent.json) "
        "into ~/.local/agy-acp-server"
    ),
    extra_dirs={"any": ("~/.local/agy-acp-server",)},
    auth_error_hints=("Authentication required", *AUTH_ERROR_HINTS),
    quirks={
        # adopts the agy login in-protocol: recorded (acp-03-authenticate answers {} in about 1.3 s)
        "authenticate_on_open": "oauth-personal",
        # ...unless the user chose a method in the server's settings (its error text names the key)
        "authenticate_unless_setting": {"file": SERVER_SETTINGS, "key": "auth.type"},
    },
)
"""Google's own ACP server (``agentInfo.name`` ``antigravity-acp``, recorded). It runs with no args
and speaks plain ACP; the ``anyagent-acp`` package's adapter drives it. This package never imports
that one: the upgrade is data."""

PROFILE = AgentProfile(
    id="antigravity",
    name="Antigravity",
    wire="agy",
    executables=("agy",),
    args=BASE_ARGS,
    login=LOGIN,
    install_hint="install Antigravity from https://antigravity.google, then run `agy install`",
    extra_dirs={
        "any": ("~/.local/bin",),
        "windows": ("%LOCALAPPDATA%\\agy\\bin",),  # where `agy install` puts agy.exe (spec)
    },
    upgrade=SERVER,
    auth_error_hints=AUTH_ERROR_HINTS,
    quirks={
        # flags the recordings show: --conversation <id> (08-resume-b), --model=<id> and
        # --mode=<mode> (09-config, 09-config-b); accept-edits is from the spec only (unverified)
        "modes": ["default", "accept-edits", "plan"],
    },
)
"""The catalog profile the plugin registers: one ``antigravity`` id for both wires. Discovery
returns the ACP server (wire ``acp``) when it is installed, else ``agy`` (wire ``agy``) with
``installation.upgrade`` naming the server."""
