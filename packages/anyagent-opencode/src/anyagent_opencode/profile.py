"""opencode's catalog entry: where to find ``opencode``, how to launch its server, how to log in.

Verified against opencode 1.18.33 (the live tier's pin): ``opencode serve --hostname 127.0.0.1
--port <free>`` prints ``opencode server listening on http://127.0.0.1:<port>`` on stdout, and
``OPENCODE_SERVER_PASSWORD`` turns on HTTP Basic auth (user ``opencode``) for every route.
"""

from __future__ import annotations

from anyagent import AgentProfile, EnvVarLogin, TerminalLogin

__all__ = ["CREDENTIAL_ENV", "LISTENING", "PROFILE", "PROVIDER_KEYS", "SERVE_ARGS", "USERNAME"]

PROVIDER_KEYS: tuple[tuple[str, str], ...] = (
    ("ANTHROPIC_API_KEY", "An Anthropic API key"),
    ("OPENAI_API_KEY", "An OpenAI API key"),
    ("GEMINI_API_KEY", "A Google Gemini API key"),
    ("GOOGLE_GENERATIVE_AI_API_KEY", "A Google AI Studio API key"),
    ("OPENROUTER_API_KEY", "An OpenRouter API key"),
    ("OPENCODE_API_KEY", "An OpenCode Zen API key"),
    ("GROQ_API_KEY", "A Groq API key"),
    ("XAI_API_KEY", "An xAI API key"),
    ("DEEPSEEK_API_KEY", "A DeepSeek API key"),
    ("MISTRAL_API_KEY", "A Mistral API key"),
)
"""Provider API-key variables opencode logs in with (its providers come from models.dev, each
naming the variables it reads; any one is enough)."""

CREDENTIAL_ENV: tuple[str, ...] = (
    "AWS_*",  # amazon-bedrock: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_BEARER_TOKEN_BEDROCK / AWS_PROFILE
    "AZURE_API_KEY",
    "AZURE_RESOURCE_NAME",
    "GOOGLE_APPLICATION_CREDENTIALS",  # google-vertex
    "GOOGLE_VERTEX_*",
    "VERTEXAI_*",
    "GITHUB_TOKEN",  # github-copilot / github-models
    "TOGETHER_API_KEY",
    "FIREWORKS_API_KEY",
    "CEREBRAS_API_KEY",
    "MOONSHOT_API_KEY",
    "ZHIPU_API_KEY",
    "PERPLEXITY_API_KEY",
    "AI_GATEWAY_API_KEY",  # vercel
    "HF_TOKEN",  # huggingface
)
"""The other provider credentials opencode honours, kept under ``CredentialPolicy.OWN_ONLY``."""

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
    login=(
        TerminalLogin(("opencode", "auth", "login"), "Log in to a model provider (or set its API-key variable)"),
        *(EnvVarLogin(name, description) for name, description in PROVIDER_KEYS),
    ),
    install_hint="npm install -g opencode-ai (or: brew install sst/tap/opencode)",
    # opencode has no single config-home variable: it follows the XDG base dirs (config, data,
    # cache, state), so ``SessionOptions.config_home`` is refused with InvalidConfiguration.
    config_home_env=None,
    extra_dirs={
        "any": ("~/.opencode/bin", "~/.local/bin", "~/.bun/bin"),
        "windows": ("%APPDATA%\\npm",),
    },
    credential_env=CREDENTIAL_ENV,
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
