"""anyagent's whole API as JSON lines for apps in any language: ``anyagent serve``.

Protocol 1, wire-compatible with anyagent-rs's sidecar (its clients and the types generated from
its ``schema.json`` work unchanged), over stdio or a WebSocket (``anyagent serve --listen``).
See ``docs/sidecar.md``. The pieces, for embedding:

- ``Hub`` (``anyagent_server.hub``): the sessions and the command dispatch, transport-agnostic;
- ``serve_stdio`` (``anyagent_server.stdio``): the stdio transport;
- ``anyagent_server.wire``: the codec between anyagent's values and the wire's JSON;
- ``anyagent_server.mockscript``: anyagent-rs's mock-script format on ``anyagent.mock``;
- ``anyagent_server.schema``: the JSON Schema of every line in and out.
"""

from __future__ import annotations

__version__ = "0.1.0"

from .hub import PROTOCOL, Hub, Peer
from .stdio import StdoutClosed, serve_stdio

__all__ = ["PROTOCOL", "Hub", "Peer", "StdoutClosed", "__version__", "serve_stdio"]
