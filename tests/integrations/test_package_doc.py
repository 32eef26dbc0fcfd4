"""The integrations package's docstring names only modules that exist."""

from __future__ import annotations

import importlib.util
import re

import memory_core.integrations as integrations


def test_every_module_the_docstring_names_exists() -> None:
    named = re.findall(r":mod:`(memory_core\.integrations\.\w+)`", integrations.__doc__ or "")
    assert len(named) >= 6
    missing = [name for name in named if importlib.util.find_spec(name) is None]
    assert missing == []
