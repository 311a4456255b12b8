"""A prompt as Claude's user-message content: text, inline images, and attachment paths.

In: an ``Input`` (text + attachment paths). Out: the ``content`` of a user frame (a string, or a
list of blocks when an image rides inline) and diagnostics for attachments that could not be
read. Every attachment also rides the text as its absolute path, so the agent can open it with
its own tools; images of at most 5 MiB, recognised by their magic bytes, are sent inline too.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import anyio

from anyagent import Input

__all__ = ["IMAGE_LIMIT", "prompt_content", "sniff_image"]

IMAGE_LIMIT = 5 * 1024 * 1024
"""Largest image (bytes) sent inline."""


def sniff_image(head: bytes) -> str | None:
    """The media type of an image Claude accepts (PNG, JPEG, GIF, WebP) from its first bytes."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if len(head) >= 12 and head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def _read_image(path: Path) -> tuple[str, bytes] | None:
    """(media type, bytes) when ``path`` is an inlinable image, else None. Raises OSError."""
    if path.stat().st_size > IMAGE_LIMIT:
        return None
    with path.open("rb") as file:
        head = file.read(16)
        media = sniff_image(head)
        if media is None:
            return None
        return media, head + file.read(IMAGE_LIMIT)


async def prompt_content(prompt: Input, *, images: bool = True) -> tuple[str | list[dict[str, Any]], list[str]]:
    """The user-message content for ``prompt`` and one message per unreadable attachment."""
    if not prompt.attachments:
        return prompt.content, []
    problems: list[str] = []
    blocks: list[dict[str, Any]] = []
    for path in prompt.attachments:
        try:
            image = await anyio.to_thread.run_sync(_read_image, path) if images else None
        except OSError as exc:
            problems.append(f"attachment {path} could not be read ({exc.strerror or exc}); only its path was sent")
            continue
        if image is not None:
            media, data = image
            blocks.append(
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": media, "data": base64.b64encode(data).decode()},
                }
            )
    listing = "\n".join(f"- {path}" for path in prompt.attachments)
    text = f"{prompt.content}\n\nAttached files:\n{listing}" if prompt.content else f"Attached files:\n{listing}"
    if not blocks:
        return text, problems
    return [*blocks, {"type": "text", "text": text}], problems
