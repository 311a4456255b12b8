"""The codex app-server's handshake and a short-lived side server, shared by the adapter (sessions,
``probe_auth``, ``plan_usage``) and ``history`` (``thread/list``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio

from anyagent import ProtocolFailed, __version__, seam, toolkit
from anyagent import jsonread as j
from anyagent.wire import JsonLines, JsonRpcError, JsonRpcPeer

CLIENT_INFO = {"name": "anyagent", "title": "anyagent", "version": __version__}
"""The ``clientInfo`` codex's ``initialize`` is given."""


async def call(peer: JsonRpcPeer, method: str, params: Any) -> Any:
    try:
        return await peer.request(method, params)
    except JsonRpcError as exc:
        raise ProtocolFailed(f"codex refused {method}: {exc.message} ({exc.code})") from None


async def initialize(peer: JsonRpcPeer) -> dict[str, Any]:
    params = {"clientInfo": CLIENT_INFO, "capabilities": {"experimentalApi": True}}
    init = j.obj(await call(peer, "initialize", params))
    await peer.notify("initialized")
    return init


@asynccontextmanager
async def side_server(request: seam.ConnectRequest) -> AsyncIterator[JsonRpcPeer]:
    """A short-lived ``codex app-server`` (never recorded) for ``probe_auth`` and ``plan_usage``,
    reaped on every path."""
    async with toolkit.launching(request, record=False) as launch:
        process = await launch.spawn()
        try:
            peer = JsonRpcPeer(JsonLines(process), jsonrpc_field=False)
            await initialize(peer)
            yield peer
        finally:
            with anyio.CancelScope(shield=True):
                await process.aclose(0.5)
