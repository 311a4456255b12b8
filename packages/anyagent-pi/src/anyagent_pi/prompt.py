"""A prompt as pi's ``prompt``/``steer`` fields: the message text and inline images.

In: an ``Input``. Out: ``{"message": ..., "images": [...]}`` and one problem per attachment that
could not be sent. Images (PNG, JPEG, GIF, WebP by their magic bytes, at most 5 MiB) ride as pi's
``ImageContent`` (``{"type": "image", "data": base64, "mimeType": ...}``); every other attachment
rides the text as its absolute path, for pi's own ``read`` tool. Reads are bounded and
cancellable (``anyagent.toolkit.read_attachment``).
"""

from __future__ import annotations

import base64
from typing import Any

from anyagent import Input
from anyagent.toolkit import FileTooLarge, NotRegularFile, read_attachment

__all__ = ["IMAGE_LIMIT", "prompt_fields"]

IMAGE_LIMIT = 5 * 1024 * 1024
"""Largest image (bytes) sent inline."""

_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def _media(head: bytes) -> str | None:
    for magic, media in _MAGIC:
        if head.startswith(magic):
            return media
    if len(head) >= 12 and head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return "image/webp"
    return None


async def prompt_fields(prompt: Input) -> tuple[dict[str, Any], list[str]]:
    """The ``message``/``images`` fields for ``prompt`` and one message per unsent attachment."""
    fields: dict[str, Any] = {"message": prompt.content}
    if not prompt.attachments:
        return fields, []
    problems: list[str] = []
    images: list[dict[str, str]] = []
    listed: list[str] = []
    for path in prompt.attachments:
        try:
            data = await read_attachment(path, IMAGE_LIMIT, accept=lambda head: _media(head) is not None)
        except FileTooLarge:
            data = None
        except NotRegularFile as exc:
            problems.append(f"attachment {path} is {exc.strerror}; it was not sent")
            continue
        except OSError as exc:
            problems.append(f"attachment {path} could not be read ({exc.strerror or exc}); only its path was sent")
            data = None
        media = _media(data[:16]) if data is not None else None
        if data is not None and media is not None:
            images.append({"type": "image", "data": base64.b64encode(data).decode(), "mimeType": media})
        else:
            listed.append(f"- {path}")
    if listed:
        listing = "\n".join(listed)
        fields["message"] = f"{prompt.content}\n\nAttached files:\n{listing}" if prompt.content else listing
    if images:
        fields["images"] = images
    return fields, problems
