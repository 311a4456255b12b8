"""A stand-in ``opencode`` that runs the real one behind a loopback TCP proxy the test can cut.

    python opencode_cutproxy.py --real <opencode> --control-file <path> -- serve --hostname 127.0.0.1 --port P

The adapter launches this script as its ``opencode``: it listens on ``P`` itself, starts the real
server on another free port with the same arguments and environment, passes the server's stdout on
with the listening line pointing at ``P``, and forwards every connection byte for byte. It exits
with the real server's status when the server exits; both are in the adapter's process group, so
the adapter's SIGTERM / SIGKILL to the group stops both.

Connections whose request is ``GET /event`` are the event streams. They are forwarded event by
event (whole ``\\n\\n``-ended SSE events), so the test can cut one at an event boundary while the
real server carries on with its turn. The test drives the proxy over a control connection
(127.0.0.1, its port written to ``--control-file``), one command a line, one JSON reply a line:

``cut``              close every open event stream now (both sides) → ``{"cut": n}``
``cut_before TEXT``  arm: close the next event stream that is about to forward an event holding
                     ``TEXT``, without that event → ``{"armed": true}``
``cut_after TEXT``   arm: the same, just after forwarding that event
``wait``             wait until an armed cut happened → ``{"cut": n}``
``hold``             hold new event streams: accept them, forward nothing yet → ``{"hold": true}``
``release``          let held streams through, stop holding → ``{"released": n}``
``refuse N``         close the next N event-stream requests unanswered (-1: all of them) → ``{}``
``stats``            ``{"opened", "cut", "refused", "upstream"}``: event streams opened (refused ones
                     not counted), cut, refused, and the real server's port
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import sys
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
from anyio.streams.buffered import BufferedByteReceiveStream

EVENT_REQUEST = re.compile(rb"(?:^|\r\n)GET /event[ ?]")
LISTENING = re.compile(r"(opencode server listening on http://127\.0\.0\.1:)(\d+)")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def publish(path: Path, port: int) -> None:
    """Write the control port to ``path`` at once (the test waits for the file)."""
    staging = path.with_name(path.name + ".tmp")
    staging.write_text(str(port))
    os.replace(staging, path)


class Link:
    """One proxied connection: the client's side and the server's."""

    def __init__(self, client: anyio.abc.SocketStream, server: anyio.abc.SocketStream) -> None:
        self.client = client
        self.server = server
        self.is_event = False
        self.released = anyio.Event()
        self.released.set()

    async def close(self) -> None:
        with anyio.CancelScope(shield=True):
            for stream in (self.client, self.server):
                try:
                    await stream.aclose()
                except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                    pass


class Proxy:
    def __init__(self, upstream: int) -> None:
        self.upstream = upstream
        self.links: set[Link] = set()
        self.opened = 0
        self.cuts = 0
        self.refused = 0
        self.refuse = 0
        self.holding = False
        self.held: list[Link] = []
        self.armed: tuple[str, bytes] | None = None
        self.fired = anyio.Event()

    # -- connections

    async def serve(self, client: anyio.abc.SocketStream) -> None:
        try:
            server = await anyio.connect_tcp("127.0.0.1", self.upstream)
        except OSError:
            await client.aclose()
            return
        link = Link(client, server)
        self.links.add(link)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._upward, link, tg.cancel_scope)
                tg.start_soon(self._downward, link, tg.cancel_scope)
        finally:
            self.links.discard(link)
            await link.close()

    async def _upward(self, link: Link, scope: anyio.CancelScope) -> None:
        try:
            async for chunk in link.client:
                if not link.is_event and EVENT_REQUEST.search(chunk):
                    if self.refuse:
                        self.refuse -= 1 if self.refuse > 0 else 0
                        self.refused += 1
                        break
                    link.is_event = True
                    self.opened += 1
                    if self.holding:
                        link.released = anyio.Event()
                        self.held.append(link)
                        await link.released.wait()
                await link.server.send(chunk)
        except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass
        scope.cancel()

    async def _downward(self, link: Link, scope: anyio.CancelScope) -> None:
        pending = b""
        try:
            async for chunk in link.server:
                if not link.is_event:
                    await link.client.send(chunk)
                    continue
                pending += chunk
                while b"\n\n" in pending:
                    event, pending = pending.split(b"\n\n", 1)
                    event += b"\n\n"
                    armed = self.armed
                    if armed is not None and armed[1] in event:
                        if armed[0] == "after":
                            await link.client.send(event)
                        self.armed = None
                        self.cuts += 1
                        self.fired.set()
                        break
                    await link.client.send(event)
                else:
                    continue
                break  # cut
        except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass
        scope.cancel()

    # -- control

    async def control(self, stream: anyio.abc.SocketStream) -> None:
        reader = BufferedByteReceiveStream(stream)
        async with stream:
            try:
                while True:
                    line = (await reader.receive_until(b"\n", 65536)).decode()
                    reply = await self.command(line)
                    await stream.send(json.dumps(reply).encode() + b"\n")
            except (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError, OSError):
                pass

    async def command(self, line: str) -> dict[str, Any]:
        name, _, argument = line.strip().partition(" ")
        if name == "cut":
            streams = [link for link in self.links if link.is_event]
            for link in streams:
                await link.close()
            self.cuts += len(streams)
            return {"cut": len(streams)}
        if name in ("cut_before", "cut_after"):
            self.armed = (name[4:], argument.encode())
            self.fired = anyio.Event()
            return {"armed": True}
        if name == "wait":
            await self.fired.wait()
            return {"cut": self.cuts}
        if name == "hold":
            self.holding = True
            return {"hold": True}
        if name == "release":
            self.holding = False
            held, self.held = self.held, []
            for link in held:
                link.released.set()
            return {"released": len(held)}
        if name == "refuse":
            self.refuse = int(argument)
            return {}
        if name == "stats":
            return {"opened": self.opened, "cut": self.cuts, "refused": self.refused, "upstream": self.upstream}
        return {"error": f"unknown command {name!r}"}


async def pass_stdout(process: anyio.abc.Process, front: int) -> None:
    """The server's stdout, its listening line pointing at the proxy's port ``front``."""
    assert process.stdout is not None
    rest = ""
    async for chunk in process.stdout:
        text = rest + chunk.decode("utf-8", "replace")
        *lines, rest = text.split("\n")
        for line in lines:
            sys.stdout.write(LISTENING.sub(lambda m: m.group(1) + str(front), line) + "\n")
        sys.stdout.flush()


async def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--real", required=True)
    parser.add_argument("--control-file", required=True)
    parser.add_argument("args", nargs=argparse.REMAINDER)
    options = parser.parse_args()
    args = [a for a in options.args if a != "--"] if options.args[:1] == ["--"] else options.args
    front = free_port()
    if "--port" in args:
        at = args.index("--port") + 1
        front = int(args[at]) or front
    else:
        args += ["--port", "0"]
        at = len(args) - 1
    upstream = free_port()
    args[at] = str(upstream)
    proxy = Proxy(upstream)
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=front)
    control = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    control_port = control.extra(anyio.abc.SocketAttribute.local_port)
    publish(Path(options.control_file), control_port)
    process = await anyio.open_process([options.real, *args], stdin=None, stdout=-1, stderr=None)
    async with anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, proxy.serve)
        tg.start_soon(control.serve, proxy.control)
        tg.start_soon(pass_stdout, process, front)
        status = await process.wait()  # not the stdout's end: the server's children may hold it
        tg.cancel_scope.cancel()
    return status if status >= 0 else 128 - status


if __name__ == "__main__":
    sys.exit(anyio.run(main))
