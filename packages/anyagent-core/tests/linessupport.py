"""A small adapter built on ``anyagent.toolkit`` over ``fakes/lines_agent.py`` (a real subprocess),
shared by the session-level tests: only its translation and commands are its own."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from anyagent import (
    AgentDetails,
    AgentInstallation,
    AgentProfile,
    Completed,
    ProtocolFailed,
    TextDelta,
    hookimpl,
    seam,
    toolkit,
)
from anyagent.process import AgentProcess, spawn
from anyagent.wire import JsonLines, WireRecorder

AGENT = Path(__file__).parent / "fakes" / "lines_agent.py"
SPAWNED: list[int] = []
DRIVERS: list[LinesDriver] = []


class LinesDriver(seam.Driver):
    """Prompts ``explode`` (the command handler raises) and ``relaunch`` (the process is swapped
    under the running loop, the way Claude Code's fast mode does) test the loop itself."""

    def __init__(
        self, request: seam.ConnectRequest, process: AgentProcess, lines: JsonLines, recorder: WireRecorder | None
    ) -> None:
        self.request = request
        self.info = seam.DriverInfo(details=AgentDetails(version="1.0"))
        self.lines = lines
        self.processes = [process]
        # an agent mode "fast-X" (the agent runs X) gives the loop a ``fast_frame`` for the text
        fast = request.installation.args[-1].startswith("fast-")
        self.loop: toolkit.DriverLoop[dict[str, Any]] = toolkit.DriverLoop(
            self._on_frame,
            self._on_command,
            recorder=recorder,
            close_grace=0.5,
            name="the lines agent",
            fast_frame=self._fast_frame if fast else None,
        )
        self.loop.attach(process, lines)

    async def run(self, link: seam.DriverLink) -> None:
        await self.loop.run(link)

    async def aclose(self) -> None:
        await self.loop.shutdown()

    def _fast_frame(self, frame: dict[str, Any]) -> seam.DriverEvent | None:
        if "text" in frame:
            return TextDelta("m1", frame["text"])  # bare: the engine takes it as its Content
        if "boom" in frame:
            raise KeyError("the fast translator has a bug")
        return None

    async def _on_frame(self, frame: dict[str, Any]) -> None:
        link = self.loop.link
        if "ack" in frame:
            await link.turn_ack()
        elif "text" in frame:
            await link.content(TextDelta("m1", frame["text"]))
        elif "end" in frame:
            await link.turn_end(Completed())
        elif "boom" in frame:
            raise KeyError("the translator has a bug")

    async def _on_command(self, command: seam.DriverCommand) -> None:
        if isinstance(command, seam.StartTurn):
            if command.input.content == "explode":
                raise RuntimeError("a bug in the adapter")
            if command.input.content == "relaunch":
                await self._relaunch()
            await self.loop.write(self.lines.send({"prompt": command.input.content, "turn": command.turn_id}))
        else:
            await toolkit.refuse(self.loop.link, command)

    async def _relaunch(self) -> None:
        old = self.processes[-1]
        process = await spawn(toolkit.launch_argv(self.request), cwd=self.request.options.cwd)
        lines = JsonLines(process)
        await lines.receive()  # hello
        self.lines = lines
        self.processes.append(process)
        self.loop.attach(process, lines)
        await old.aclose(grace=0.5)


class LinesAdapter(seam.Adapter):
    wire = "lines"

    async def connect(self, request: seam.ConnectRequest) -> seam.Driver:
        async with toolkit.launching(request) as launch:
            process = await launch.spawn()
            SPAWNED.append(process.pid)
            lines = JsonLines(process)
            hello = await lines.receive()
            if not isinstance(hello, dict) or "hello" not in hello:
                raise ProtocolFailed("no hello")
            driver = LinesDriver(request, process, lines, launch.recorder)
        DRIVERS.append(driver)
        return driver


class Plugin:
    @hookimpl
    def anyagent_adapters(self) -> list[type[seam.Adapter]]:
        return [LinesAdapter]

    @hookimpl
    def anyagent_agents(self) -> list[AgentProfile]:
        return [AgentProfile(id="lines", name="Lines", wire="lines", executables=("lines-agent",))]


def agent(mode: str) -> AgentInstallation:
    """The lines agent in ``mode`` (see ``fakes/lines_agent.py``)."""
    return AgentInstallation(id="lines", name="Lines", executable_path=sys.executable, args=(str(AGENT), mode))
