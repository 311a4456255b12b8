"""The ACP catalog: every agent this package knows, as ``AgentProfile`` data.

Launch args, login commands and quirks here were verified against real installs (the live-tier
notes, the spec's per-agent notes, or the Rust original's probes). Anything not verified is left
out: a guessed flag never ships. ``quirks`` keys are documented in ``anyagent_acp.quirks``.
"""

from __future__ import annotations

from anyagent import AgentProfile, EnvVarLogin, TerminalLogin

__all__ = [
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
    # own mode id → portable name; its own `ask` (questions only, no edits) keeps the name
    modes={"agent": "default", "plan": "plan", "ask": "ask"},
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
"""The catalog profile of Cursor CLI (`cursor-agent acp`) (executables, login, install hint, quirks)."""

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
"""The catalog profile of Grok (`grok`) (executables, login, install hint, quirks)."""

HERMES = AgentProfile(
    id="hermes",
    name="Hermes Agent",
    wire="acp",
    executables=("hermes",),
    args=("acp",),
    login=(TerminalLogin(("hermes", "model"), "Pick a model provider for Hermes"),),
    install_hint="pip install 'hermes-agent[acp]' (see https://github.com/NousResearch/hermes-agent)",
    # own mode id → portable name (0.19.0; `dont_ask` allows every edit but still asks for
    # dangerous commands: no portable name)
    modes={"default": "default", "accept_edits": "accept-edits"},
    config_home_env="HERMES_HOME",
    extra_dirs={"any": ("~/.local/bin",), "windows": ("%LOCALAPPDATA%\\hermes\\bin",)},
    auth_error_hints=("No LLM provider configured",),
    quirks={
        # 0.19.0 wedges when session/cancel lands outside a model call (beside a pending
        # permission, either order, or while idle): a pending permission is cancelled by its answer
        "cancel_answers_first": True,
        # session/new fails "No LLM provider configured" when logged out (0.19.0)
        "login_proven_by_session": True,
        # ...and should it wedge anyway, every prompt is answered at once with this text
        "wedged_reply": {
            "prefix": "Queued for the next turn.",
            "bug": "hermes-agent 0.19.0 fails a cancelled run that ended without text "
            "('NoneType' object has no attribute 'startswith') and never clears its running flag",
        },
    },
)
"""The catalog profile of Hermes Agent (`hermes acp`) (executables, login, install hint, quirks)."""

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
"""The catalog profile of Kiro CLI (`kiro-cli acp`) (executables, login, install hint, quirks)."""

QWEN = AgentProfile(
    id="qwen",
    name="Qwen Code",
    wire="acp",
    executables=("qwen",),
    args=("--acp",),
    login=(EnvVarLogin("OPENAI_API_KEY", "An OpenAI-compatible API key (or log in inside `qwen`)"),),
    install_hint="npm install -g @qwen-code/qwen-code",
    # own mode id → portable name (0.15, 0.24; 0.24's `auto` is an LLM classifier: no portable name)
    modes={"default": "default", "auto-edit": "accept-edits", "plan": "plan", "yolo": "bypass-permissions"},
    extra_dirs={"windows": ("%APPDATA%\\npm",)},
    auth_error_hints=(_AUTH_REQUIRED,),
    quirks={
        # 0.24 reports mode/model changes only through these, never current_mode_update
        "notifications": {
            "qwen/notify/session/mode-update": "mode_update",
            "qwen/notify/session/model-update": "model_update",
        },
        # session/new fails -32000 "Authentication required" when logged out (0.15, 0.24)
        "login_proven_by_session": True,
    },
)
"""The catalog profile of Qwen Code (`qwen --acp`) (executables, login, install hint, quirks)."""

GEMINI = AgentProfile(
    id="gemini",
    name="Gemini CLI",
    wire="acp",
    executables=("gemini",),
    args=("--acp",),
    login=(EnvVarLogin("GEMINI_API_KEY", "A Gemini API key"),),
    install_hint="npm install -g @google/gemini-cli",
    # own mode id → portable name (0.61)
    modes={"default": "default", "autoEdit": "accept-edits", "plan": "plan", "yolo": "bypass-permissions"},
    extra_dirs={"windows": ("%APPDATA%\\npm",)},
    auth_error_hints=("API key is missing",),
    quirks={
        # set_mode is announced as an agent_message_chunk "[MODE_UPDATE] <mode>"
        "mode_text_prefix": "[MODE_UPDATE] ",
        # 0.61 cannot create a file when a missing one is reported as -32002 (gemini-cli#17588)
        "read_missing_as_empty": True,
        # session/new fails -32000 "Gemini API key is missing" when logged out (0.61)
        "login_proven_by_session": True,
    },
)
"""The catalog profile of Gemini CLI (`gemini --acp`) (executables, login, install hint, quirks)."""

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
    # own mode id → portable name (0.23, 0.49; 0.49's `auto` lets the model decide: no portable name)
    modes={
        "default": "default",
        "acceptEdits": "accept-edits",
        "plan": "plan",
        "bypassPermissions": "bypass-permissions",
    },
    extra_dirs={"windows": ("%APPDATA%\\npm",)},
    auth_error_hints=(_AUTH_REQUIRED,),
    quirks={
        # as root the bridge's SDK refuses to start unless told it runs in a sandbox
        "root_env": {"IS_SANDBOX": "1"},
    },
)
"""The catalog profile of Claude Code through its ACP bridge, `claude-agent-acp` (executables, login, quirks)."""

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
    # own mode id → portable name: 0.16 `auto` ("Default") and `full-access`; 2.x `agent` (its
    # default, an LLM reviews commands) and `agent-full-access`
    modes={
        "auto": "default",
        "agent": "default",
        "full-access": "bypass-permissions",
        "agent-full-access": "bypass-permissions",
    },
    config_home_env="CODEX_HOME",
    extra_dirs={"windows": ("%APPDATA%\\npm",)},
    auth_error_hints=(_AUTH_REQUIRED,),
    quirks={
        # session/new fails -32000 "Authentication required" when logged out (0.16; 2.x also
        # reports the login in _auth/status_update, read for every agent)
        "login_proven_by_session": True,
    },
)
"""The catalog profile of Codex through its ACP bridge (`codex-acp`) (executables, login, install hint, quirks)."""

PROFILES: tuple[AgentProfile, ...] = (
    CURSOR,
    GROK,
    HERMES,
    KIRO,
    QWEN,
    GEMINI,
    CLAUDE_ACP,
    CODEX_ACP,
)
"""What the plugin registers, in catalog order."""
