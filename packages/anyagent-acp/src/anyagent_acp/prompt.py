"""An ``Input`` as ACP prompt content blocks.

What flows in: the prompt text, its attachment paths, and what the agent's ``promptCapabilities``
allow. What flows out: the ``prompt`` array for ``session/prompt`` plus problems worth a diagnostic.
Media are inlined only when advertised (images, audio, embedded resources); every other
attachment becomes its absolute path in the text, so the agent can still read it itself. An
attachment that is not a regular file (a FIFO, a device) is refused: a problem, and the prompt goes
without it. Reads are bounded by bytes and cancellable (``anyagent.toolkit.read_attachment``).
"""

from __future__ import annotations

import base64
import mimetypes
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from anyagent import Input
from anyagent import jsonread as j
from anyagent.toolkit import FileTooLarge, NotRegularFile, read_attachment

__all__ = ["MAX_INLINE_BYTES", "PromptMedia", "prompt_blocks"]

MAX_INLINE_BYTES = 10 * 1024 * 1024
"""Attachments larger than this are never inlined (their path goes in the text)."""


@attrs.frozen
class PromptMedia:
    """Which content blocks beyond text the agent takes in ``session/prompt``."""

    image: bool = False
    audio: bool = False
    embedded_context: bool = False

    @classmethod
    def read(cls, init: Mapping[str, Any]) -> PromptMedia:
        """From an ``initialize`` result's ``agentCapabilities.promptCapabilities``."""
        prompt = j.obj(j.path(init, "agentCapabilities", "promptCapabilities"))
        return cls(j.flag(prompt.get("image")), j.flag(prompt.get("audio")), j.flag(prompt.get("embeddedContext")))


def _mime(path: Path) -> str:
    guessed, _ = mimetypes.guess_type(path.name)
    return guessed or "application/octet-stream"


def _is_text(data: bytes) -> bool:
    if b"\x00" in data[:8192]:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _block(path: Path, data: bytes, media: PromptMedia) -> dict[str, Any] | None:
    """The inline block for one attachment, or None when it must ride as a path."""
    mime = _mime(path)
    encoded = base64.b64encode(data).decode("ascii")
    if mime.startswith("image/") and media.image:
        return {"type": "image", "mimeType": mime, "data": encoded, "uri": path.as_uri()}
    if mime.startswith("audio/") and media.audio:
        return {"type": "audio", "mimeType": mime, "data": encoded}
    if not media.embedded_context:
        return None
    if _is_text(data):
        resource = {"uri": path.as_uri(), "mimeType": mime, "text": data.decode("utf-8")}
    else:
        resource = {"uri": path.as_uri(), "mimeType": mime, "blob": encoded}
    return {"type": "resource", "resource": resource}


async def _read(path: Path) -> tuple[bytes | None, str | None, bool]:
    """(bytes to inline or None, a problem or None, whether the path may ride the text)."""
    try:
        return await read_attachment(path, MAX_INLINE_BYTES), None, True
    except FileTooLarge as exc:
        size = f"{exc.size} bytes" if exc.size is not None else f"over {MAX_INLINE_BYTES} bytes"
        return None, f"attachment {path} is {size}; sent as a path, not inlined", True
    except NotRegularFile as exc:
        return None, f"attachment {path} is {exc.strerror}; it was not sent", False
    except OSError as exc:
        return None, f"attachment {path} could not be read ({exc.strerror or exc}); sent as a path", True


async def prompt_blocks(value: Input, media: PromptMedia) -> tuple[list[dict[str, Any]], list[str]]:
    """The ``prompt`` array for ``value`` and the problems met while reading attachments."""
    blocks: list[dict[str, Any]] = []
    problems: list[str] = []
    by_path: list[Path] = []
    for path in value.attachments:
        data, problem, send = await _read(path)
        if problem is not None:
            problems.append(problem)
        if not send:
            continue
        block = _block(path, data, media) if data is not None else None
        if block is None:
            by_path.append(path)
        else:
            blocks.append(block)
    text = value.content
    if by_path:
        refs = "\n".join(f"Attached file: {path}" for path in by_path)
        text = f"{text}\n\n{refs}" if text else refs
    blocks.append({"type": "text", "text": text})
    return blocks, problems
