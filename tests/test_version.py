"""The version: read from the installed package's metadata, exposed once."""

from __future__ import annotations

import re
from importlib import metadata

import memory_core
from memory_core.version import VERSION


def test_version_is_the_installed_distributions() -> None:
    assert metadata.version("memory-core") == VERSION


def test_the_package_exposes_the_same_version() -> None:
    assert memory_core.__version__ is VERSION
    assert "__version__" in memory_core.__all__


def test_the_version_is_a_release_number() -> None:
    assert re.fullmatch(r"\d+(\.\d+)*([a-z0-9.+-]*)", VERSION), VERSION
    assert VERSION != "0+unknown"
