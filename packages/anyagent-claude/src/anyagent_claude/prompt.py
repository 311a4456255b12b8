"""A prompt as Claude's user-message content: text, inline images, and attachment paths.

In: an ``Input`` (text + attachment paths). Out: the ``content`` of a user frame (a string, or a
list of blocks when an image rides inline) and diagnostics for attachments that could not be
read. An attachment that is not a regular file (a FIFO, a device) is refused: a diagnostic, and
the prompt goes without it. Every other attachment rides the text as its absolute path, so the
agent can open it with its own tools; images of at most 5 MiB, recognised by their magic bytes,
are sent inline too. Reads are bounded and cancellable (``anyagent.toolkit.read_attachment``).
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from anyagent import Input
from anyagent.toolkit import FileTooLarge, NotRegularFile, read_attachment

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


def _is_image(head: bytes) -> bool:
    return sniff_image(head) is not None


def _never(head: bytes) -> bool:
    return False


async def prompt_content(prompt: Input, *, images: bool = True) -> tuple[str | list[dict[str, Any]], list[str]]:
    """The user-message content for ``prompt`` and one message per unreadable attachment."""
    if not prompt.attachments:
        return prompt.content, []
    problems: list[str] = []
    blocks: list[dict[str, Any]] = []
    listed: list[Path] = []
    for path in prompt.attachments:
        try:
            # only the magic bytes of a non-image are read; without images, only what it is
            data = await read_attachment(path, IMAGE_LIMIT, accept=_is_image if images else _never)
        except FileTooLarge:
            data = None  # too large to inline: its path is enough
        except NotRegularFile as exc:
            problems.append(f"attachment {path} is {exc.strerror}; it was not sent")
            continue
        except OSError as exc:
            problems.append(f"attachment {path} could not be read ({exc.strerror or exc}); only its path was sent")
            data = None
        listed.append(path)
        media = sniff_image(data[:16]) if data is not None else None
        if data is not None and media is not None:
            blocks.append(
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": media, "data": base64.b64encode(data).decode()},
                }
            )
    if not listed:
        return prompt.content, problems
    listing = "\n".join(f"- {path}" for path in listed)
    text = f"{prompt.content}\n\nAttached files:\n{listing}" if prompt.content else f"Attached files:\n{listing}"
    if not blocks:
        return text, problems
    return [*blocks, {"type": "text", "text": text}], problems
