"""The ACP catalog: every agent this package knows, as ``AgentProfile`` data.

Launch args, login commands and quirks here were verified against real installs (the live-tier
notes, the spec's per-agent notes, or the Rust original's probes). Anything not verified is left
out: a guessed flag never ships. ``quirks`` keys are documented in ``anyagent_acp.quirks``.
"""

from __future__ import annotations

from anyagent import AgentProfile, EnvVarLogin, TerminalLogin

__all__ = [
    "ANTIGRAVITY_ACP",
    "CLAUDE_ACP",
    "CODEX_ACP",
    "CURSOR",
    "GEMINI",
    "GROK",
    "HERMES",
    "KIRO",
    "PROFILES",
    "QWEN",
]

_AUTH_REQUIRED = "Authentication required"

CURSOR = AgentProfile(
    id="cursor",
    name="Cursor CLI",
    wire="acp",
    executables=("cursor-agent",),
    args=("acp",),
    login=(TerminalLogin(("cursor-agent", "login"), "Log in to Cursor"), EnvVarLogin("CURSOR_API_KEY")),
    install_hint="curl https://cursor.com/install -fsS | bash",
    extra_dirs={"any": ("~/.local/bin",), "windows": ("%LOCALAPPDATA%\\cursor-agent",)},
    auth_error_hints=(_AUTH_REQUIRED,),
    quirks={
        # `cursor-agent about` prints version and account; it fails when logged out
        "preflight": {"args": ["about"]},
        "requests": {
            "cursor/ask_question": "cursor_question",
            "cursor/update_todos": "cursor_todos",
            "cursor/task": "cursor_task",
        },
        "notifications": {"cursor/update_todos": "cursor_todos", "cursor/task": "cursor_task"},
        # cursor reports no usage: each turn ends with a 4-chars-per-token estimate
        "estimate_context_usage": True,
    },
)

GROK = AgentProfile(
    id="grok",
    name="Grok",
    wire="acp",
    executables=("grok",),
    # the top-level flag skips a multi-second update check; --no-leader avoids a wedged shared leader
    args=("--no-auto-update", "agent", "--no-leader", "stdio"),
    login=(EnvVarLogin("XAI_API_KEY", "An xAI API key (or log in inside `grok`)"),),
    install_hint="npm install -g @xai-official/grok",
    extra_dirs={
        "any": ("~/.local/bin", "~/.grok/bin", "~/.npm-global/bin"),
        "windows": ("%APPDATA%\\npm",),
    },
    auth_error_hints=(_AUTH_REQUIRED,),
    quirks={
        # grok's session/prompt RPC can hang after the turn finished; this notification is authoritative
        "turn_end_notification": "_x.ai/session/prompt_complete",
        "requests": {"_x.ai/ask_user_question": "grok_question", "x.ai/ask_user_question": "grok_question"},
        "notifications": {"_x.ai/models/update": "models_update", "_x.ai/session_notification": "model_changed"},
    },
)

HERMES = AgentProfile(
    id="hermes",
    name="Hermes Agent",
    wire="acp",
    executables=("hermes",),
    args=("acp",),
    login=(TerminalLogin(("hermes", "model"), "Pick a model provider for Hermes"),),
    install_hint="pip install 'hermes-agent[acp]' (see https://github.com/NousResearch/hermes-agent)",
    config_home_env="HERMES_HOME",
    extra_dirs={"any": ("~/.local/bin",), "windows": ("%LOCALAPPDATA%\\hermes\\bin",)},
    auth_error_hints=("No LLM provider configured",),
    quirks={
        # 0.19.0 wedges when session/cancel lands outside a model call (beside a pending
        # permission, either order, or while idle): a pending permission is cancelled by its answer
        "cancel_answers_first": True,
        # ...and should it wedge anyway, every prompt is answered at once with this text
        "wedged_reply": {
            "prefix": "Queued for the next turn.",
            "bug": "hermes-agent 0.19.0 fails a cancelled run that ended without text "
            "('NoneType' object has no attribute 'startswith') and never clears its running flag",
        },
    },
)

KIRO = AgentProfile(
    id="kiro",
    name="Kiro CLI",
    wire="acp",
    executables=("kiro-cli",),
    args=("acp",),
    login=(TerminalLogin(("kiro-cli", "login"), "Log in to Kiro"),),
    install_hint="install from https://kiro.dev",
    extra_dirs={"any": ("~/.local/bin",), "windows": ("%LOCALAPPDATA%\\Kiro-Cli",)},
    auth_error_hints=("not logged in",),
    quirks={
        "notifications": {"_kiro.dev/commands/available": "commands", "_kiro.dev/metadata": "effort_metadata"},
        # no wire call for effort: `/effort <level>` runs as a hidden prompt between turns (2.20.1)
        "effort_prompt": {
            "levels": ["low", "medium", "high", "xhigh", "max"],
            "without": [
                "auto",
                "claude-sonnet-4.5",
                "claude-sonnet-4",
                "claude-haiku-4.5",
                "deepseek-3.2",
                "minimax-m2.5",
                "minimax-m2.1",
                "glm-5",
                "qwen3-coder-next",
            ],
        },
        # its cancel can race the next prompt, which then comes back `cancelled` at once (2.19.1)
        "retry_spurious_cancel": True,
    },
)

QWEN = AgentProfile(
    id="qwen",
    name="Qwen Code",
    wire="acp",
    executables=("qwen",),
    args=("--acp",),
    login=(EnvVarLogin("OPENAI_API_KEY", "An OpenAI-compatible API key (or log in inside `qwen`)"),),
    install_hint="npm install -g @qwen-code/qwen-code",
    extra_dirs={"windows": ("%APPDATA%\\npm",)},
    auth_error_hints=(_AUTH_REQUIRED,),
    quirks={
        # 0.24 reports mode/model changes only through these, never current_mode_update
        "notifications": {
            "qwen/notify/session/mode-update": "mode_update",
            "qwen/notify/session/model-update": "model_update",
        },
    },
)

GEMINI = AgentProfile(
    id="gemini",
    name="Gemini CLI",
    wire="acp",
    executables=("gemini",),
    args=("--acp",),
    login=(EnvVarLogin("GEMINI_API_KEY", "A Gemini API key"),),
    install_hint="npm install -g @google/gemini-cli",
    extra_dirs={"windows": ("%APPDATA%\\npm",)},
    auth_error_hints=("API key is missing",),
    quirks={
        # set_mode is announced as an agent_message_chunk "[MODE_UPDATE] <mode>"
        "mode_text_prefix": "[MODE_UPDATE] ",
        # 0.61 cannot create a file when a missing one is reported as -32002 (gemini-cli#17588)
        "read_missing_as_empty": True,
    },
)

CLAUDE_ACP = AgentProfile(
    id="claude-acp",
    name="Claude Code (ACP bridge)",
    wire="acp",
    executables=("claude-agent-acp", "claude-code-acp"),
    login=(
        TerminalLogin(("claude", "auth", "login"), "Log in to Claude Code"),
        EnvVarLogin("ANTHROPIC_API_KEY", "An Anthropic API key"),
    ),
    install_hint="npm install -g @agentclientprotocol/claude-agent-acp",
    extra_dirs={"windows": ("%APPDATA%\\npm",)},
    auth_error_hints=(_AUTH_REQUIRED,),
    quirks={
        # as root the bridge's SDK refuses to start unless told it runs in a sandbox
        "root_env": {"IS_SANDBOX": "1"},
    },
)

CODEX_ACP = AgentProfile(
    id="codex-acp",
    name="Codex (ACP bridge)",
    wire="acp",
    executables=("codex-acp",),
    login=(
        TerminalLogin(("codex", "login"), "Log in to Codex"),
        EnvVarLogin("CODEX_API_KEY", "A Codex / OpenAI API key"),
    ),
    install_hint="npm install -g @zed-industries/codex-acp (commands need bubblewrap on Linux)",
    config_home_env="CODEX_HOME",
    extra_dirs={"windows": ("%APPDATA%\\npm",)},
    auth_error_hints=(_AUTH_REQUIRED,),
)

ANTIGRAVITY_ACP = AgentProfile(
    id="antigravity-acp",
    name="Antigravity (ACP server)",
    wire="acp",
    executables=("agy_acp_server.par", "antigravity-acp"),
    login=(TerminalLogin(("agy",), "Log in with the Antigravity CLI (`agy`), then reopen"),),
    install_hint="download `antigravity-acp` from the ACP registry into ~/.local/agy-acp-server",
    extra_dirs={"any": ("~/.local/agy-acp-server",)},
    auth_error_hints=("authentication required", "authentication failed"),
    quirks={
        # adopts the agy login in-protocol (about 2 s, no browser); bounded, since logged out of
        # agy too it would start a browser flow instead
        "authenticate_on_open": "oauth-personal",
    },
)
"""Google's ACP server itself. The ``antigravity`` id belongs to the agy package, whose profile
names this one as its ``upgrade``; it is also registered here so the server works on its own."""

PROFILES: tuple[AgentProfile, ...] = (
    CURSOR,
    GROK,
    HERMES,
    KIRO,
    QWEN,
    GEMINI,
    CLAUDE_ACP,
    CODEX_ACP,
    ANTIGRAVITY_ACP,
)
"""What the plugin registers, in catalog order."""
