"""The version of anyagent-core: the one place it is written (hatch reads it for the package metadata)."""

__version__ = "0.1.0"
