"""The store's exceptions: one tree under ``anyagent.AgentError``.

::

    anyagent.AgentError
    └── StoreError              base of every store failure; ``location`` names the file or server
        ├── StoreCorrupt        the file is not a readable database (truncated, garbage, damaged pages)
        ├── ForeignDatabase     a real database, but not an anyagent store (another app's file)
        ├── StoreTooNew         written by a newer anyagent-store (schema version above this one's)
        ├── StoreFull           a write did not fit (disk full, or the store's ``max_bytes`` cap)
        ├── StoreUnavailable    the database could not be reached or its driver is not installed
        └── ThreadNotFound      no thread has that id (or the prefix names none, or several)

A fork on an agent without forking is refused with core's ``anyagent.UnsupportedFeature``.
"""

from __future__ import annotations

from anyagent import AgentError

__all__ = [
    "ForeignDatabase",
    "StoreCorrupt",
    "StoreError",
    "StoreFull",
    "StoreTooNew",
    "StoreUnavailable",
    "ThreadNotFound",
]


class StoreError(AgentError):
    """Base of every store failure. ``location`` is the database file's path or the server's name."""

    def __init__(self, message: str, location: str = "") -> None:
        super().__init__(message)
        self.location = location


class StoreCorrupt(StoreError):
    """The database file cannot be read as a database; it is left untouched (never reset)."""


class ForeignDatabase(StoreError):
    """The file is a database of some other application; it is left untouched."""


class StoreTooNew(StoreError):
    """The store's schema version is newer than this anyagent-store knows; upgrade the package."""


class StoreFull(StoreError):
    """A write did not fit: the disk is full or the store reached its ``max_bytes`` cap."""


class StoreUnavailable(StoreError):
    """The database server could not be reached, or the backend's driver is not installed."""


class ThreadNotFound(StoreError):
    """No stored thread has this id (a prefix must name exactly one)."""
