"""Claude Code's catalog entry: where to find ``claude``, how to launch it, how to log in.

Everything here is data verified against a real install (2.1.241 logged in, 2.1.332 against a
loopback model); the adapter reads ``PROFILE.args`` and ``PROFILE.quirks`` instead of hardcoding.
"""

from __future__ import annotations

from anyagent import AgentProfile, EnvVarLogin, TerminalLogin

__all__ = ["BASE_ARGS", "LOGIN", "PROFILE"]

BASE_ARGS: tuple[str, ...] = (
    "-p",
    "--output-format",
    "stream-json",
    "--input-format",
    "stream-json",
    "--verbose",
    "--include-partial-messages",
    # hidden from --help since 2.1.3xx but required: without it no can_use_tool request is sent
    "--permission-prompt-tool",
    "stdio",
    "--replay-user-messages",
)
"""The flags that put ``claude`` into its bidirectional stream-json mode."""

LOGIN = (
    TerminalLogin(("claude", "auth", "login"), "Log in to Claude Code (subscription or Console account)"),
    EnvVarLogin("ANTHROPIC_API_KEY", "An Anthropic API key"),
)
"""How a logged-out user logs in; anyagent only shows these, it never runs them."""

PROFILE = AgentProfile(
    id="claude",
    name="Claude Code",
    wire="claude",
    executables=("claude",),
    args=BASE_ARGS,
    login=LOGIN,
    install_hint="npm install -g @anthropic-ai/claude-code",
    # own mode id → portable name: configure("mode", "accept-edits") works as well as "acceptEdits"
    modes={
        "default": "default",
        "acceptEdits": "accept-edits",
        "plan": "plan",
        "bypassPermissions": "bypass-permissions",
    },
    config_home_env="CLAUDE_CONFIG_DIR",
    # what Claude Code itself reads besides ANTHROPIC_API_KEY (kept by CredentialPolicy.OWN_ONLY)
    credential_env=("ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "AWS_*", "GOOGLE_APPLICATION_CREDENTIALS"),
    extra_dirs={
        # the native installer, then the old per-user "local" install
        "any": ("~/.local/bin", "~/.claude/local"),
        "windows": ("%USERPROFILE%\\.local\\bin", "%APPDATA%\\npm"),
    },
    auth_error_hints=(
        "Not logged in",
        "Please run /login",
        "authentication_failed",
        "Invalid API key",
        "OAuth token has expired",
    ),
    quirks={
        # rewind_files only works when the CLI keeps file checkpoints for SDK sessions
        "env": {"CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING": "true"},
        # stderr / result errors of a launch whose --resume (or --resume-session-at) is unknown
        "resume_failed_hints": [
            "No conversation found",
            "--resume requires a valid session",
            "No message found with message.uuid",
        ],
    },
)
"""The catalog profile the plugin registers."""
