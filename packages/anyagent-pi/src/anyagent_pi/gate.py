"""The opt-in permission gate: a small pi extension that asks anyagent before every tool call.

pi has no permission prompts of its own: it runs every tool it is given. When a session asks for
``PermissionMode.ASK`` *and* opts in with ``SessionOptions.configure("permission_gate", True)``,
the adapter writes ``EXTENSION`` to a private file for that session only and launches pi with
``-e <file>``. The extension turns each ``tool_call`` into ``ctx.ui.confirm(MARKER + ...)``; in
RPC mode that is an ``extension_ui_request`` the adapter shows as a ``PermissionRequest``. A
denied call is blocked (the model is told "Denied by the user"). Nothing is written to the
user's pi configuration, and the file is removed when the session closes.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

__all__ = ["EXTENSION", "GATE_OPTION", "MARKER", "write_gate"]

GATE_OPTION = "permission_gate"
"""The config option that opts in (``SessionOptions.configure("permission_gate", True)``)."""

MARKER = "[anyagent-permission]"
"""The title prefix that tells the adapter a confirm dialog is the gate's."""

EXTENSION = """\
// Written by anyagent-pi for one session: ask the RPC client before every tool call.
export default function (pi: any) {
  pi.on("tool_call", async (event: any, ctx: any) => {
    if (!ctx.hasUI) return { block: true, reason: "No one to ask for permission" };
    const call = { toolCallId: event.toolCallId, toolName: event.toolName, input: event.input };
    const allowed = await ctx.ui.confirm("MARKER " + event.toolName, JSON.stringify(call));
    return allowed ? undefined : { block: true, reason: "Denied by the user" };
  });
}
""".replace("MARKER", MARKER)
"""The extension's TypeScript source (pi loads ``.ts`` extensions directly)."""


def write_gate() -> Path:
    """Write the extension into a new private directory; returns the file (remove its folder
    when the session ends)."""
    folder = Path(tempfile.mkdtemp(prefix="anyagent-pi-gate-"))
    path = folder / "anyagent-permission-gate.ts"
    path.write_text(EXTENSION, encoding="utf-8")
    return path
