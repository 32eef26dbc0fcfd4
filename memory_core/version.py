"""The installed package's version, read once from its metadata (the one place it is
written is ``pyproject.toml``)."""

from __future__ import annotations

from importlib import metadata

try:
    VERSION = metadata.version("memory-core")
except metadata.PackageNotFoundError:  # imported from a checkout that was never installed
    VERSION = "0+unknown"
