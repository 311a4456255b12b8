"""Core's own plugin: the scripted mock adapter, registered through the same hooks as third parties."""

from __future__ import annotations

from .hookspecs import hookimpl
from .mock import MockAdapter
from .seam import Adapter


@hookimpl
def anyagent_adapters() -> list[type[Adapter]]:
    """The ``mock`` wire (its profile is added only by ``Runtime.with_mock``)."""
    return [MockAdapter]
