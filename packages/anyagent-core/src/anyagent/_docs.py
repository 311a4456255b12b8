"""Tables in the documentation that are generated from the code (``nox -s readme``; tests keep them current)."""

from __future__ import annotations

from .types import DiagnosticCode


def codes_markdown() -> str:
    """The ``DiagnosticCode`` table of ``docs/events.md``."""
    rows = [f"| `{code}` | {meaning.replace('``', '`')} |" for code, meaning in DiagnosticCode.all().items()]
    return "\n".join(["| code | meaning |", "|---|---|", *rows])
