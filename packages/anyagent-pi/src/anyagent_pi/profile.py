"""pi's catalog entry: where to find ``pi``, how to launch it, how to log in.

Facts verified live against pi 0.73.1 (``@mariozechner/pi-coding-agent``) and 1.6.0
(``@earendil-works/pi-coding-agent``, on Node 22), the live tier's two pins, and the reference
recordings of pi 0.84.4. The package moved: ``@mariozechner/pi-coding-agent`` stops at
0.73.1 on the npm registry, the current name is ``@earendil-works/pi-coding-agent`` (1.6.0 on
2026-12-01), so the install hint names the new package.
"""

from __future__ import annotations

from anyagent import AgentProfile, EnvVarLogin, TerminalLogin

__all__ = ["BASE_ARGS", "LOGIN", "PROFILE", "PROVIDER_KEYS"]

BASE_ARGS: tuple[str, ...] = ("--mode", "rpc")
"""The flags that put ``pi`` into its JSON-lines RPC mode."""

PROVIDER_KEYS: tuple[tuple[str, str], ...] = (
    ("ANTHROPIC_API_KEY", "An Anthropic API key"),
    ("OPENAI_API_KEY", "An OpenAI API key"),
    ("GEMINI_API_KEY", "A Google Gemini API key"),
    ("OPENROUTER_API_KEY", "An OpenRouter API key"),
    ("GROQ_API_KEY", "A Groq API key"),
    ("XAI_API_KEY", "An xAI API key"),
    ("MISTRAL_API_KEY", "A Mistral API key"),
)
"""Provider API-key variables pi reads (any one is enough)."""

LOGIN = (
    TerminalLogin(("pi",), "Start pi and type /login <provider> (subscription or API key)"),
    *(EnvVarLogin(name, description) for name, description in PROVIDER_KEYS),
)
"""How a logged-out user logs in; anyagent only shows these, it never runs them."""

PROFILE = AgentProfile(
    id="pi",
    name="pi",
    wire="pi",
    executables=("pi",),
    args=BASE_ARGS,
    login=LOGIN,
    install_hint="npm install -g @earendil-works/pi-coding-agent",
    config_home_env="PI_CODING_AGENT_DIR",
    credential_env=("AWS_*", "GOOGLE_APPLICATION_CREDENTIALS", "AZURE_OPENAI_API_KEY"),
    extra_dirs={"any": ("~/.npm-global/bin",), "windows": ("%APPDATA%\\npm",)},
    auth_error_hints=("No API key found", "No model selected", "/login"),
    quirks={
        # the turn's end: ``agent_end`` (0.73.1); 0.84.x adds ``agent_settled`` after it
        "turn_end_frames": ["agent_end", "agent_settled"],
        # thinking levels when ``get_available_thinking_levels`` is unknown (pi < 0.8x)
        "thinking_levels": ["off", "minimal", "low", "medium", "high"],
    },
)
"""The catalog profile the plugin registers."""
