"""Core's own plugin: the scripted mock adapter, registered through the same hooks as third parties."""

from __future__ import annotations

from typing import Any

from .hookspecs import hookimpl
from .installation import AgentProfile
from .registry import CliCommand, Register
from .seam import Adapter


def mock_adapter() -> Adapter:
    """A new ``MockAdapter`` (the mock module is imported when a mock session opens)."""
    from .mock import MockAdapter

    return MockAdapter()


@hookimpl
def anyagent_adapters(register: Register) -> None:
    """The ``mock`` wire (its profile is added only by ``Runtime.with_mock``)."""
    register.adapter(mock_adapter, wire="mock")


class MockPlugin:
    """The plugin ``Runtime.with_mock`` loads: the mock adapter bound to a script, and its profile."""

    def __init__(self, script: Any) -> None:
        self.script = script

    @hookimpl
    def anyagent_adapters(self, register: Any) -> None:
        from .mock import MockAdapter

        register.adapter(lambda: MockAdapter(self.script), wire="mock")

    @hookimpl
    def anyagent_agents(self, register: Any) -> None:
        register.profile(AgentProfile(id="mock", name="Mock agent", wire="mock", executables=()))


@hookimpl
def anyagent_commands(register: Register) -> None:
    """``anyagent doctor`` (its code in ``_doctor``, imported when the command line is built)."""
    from . import _doctor

    register.command(
        CliCommand(
            name="doctor",
            help=_doctor.HELP,
            run=_doctor.run_command,
            arguments=_doctor.arguments,
            description=_doctor.DESCRIPTION,
        )
    )
