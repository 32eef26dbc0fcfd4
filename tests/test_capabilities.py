"""Capabilities: frozen, named flags, printable as a table and JSON."""

from __future__ import annotations

import dataclasses
import json

import pytest

from memory_core import Capabilities
from memory_core.capabilities import FLAG_DOCS, LIMIT_DOCS


def test_frozen() -> None:
    caps = Capabilities(delete_message=True)
    with pytest.raises(dataclasses.FrozenInstanceError):
        caps.delete_message = False  # type: ignore[misc]


def test_supports_reads_flags_and_rejects_unknown_names() -> None:
    caps = Capabilities(delete_message=True)
    assert caps.supports("delete_message") is True
    assert caps.supports("list_sessions") is False
    with pytest.raises(KeyError, match="no_such_flag"):
        caps.supports("no_such_flag")
    with pytest.raises(KeyError):
        caps.supports("max_page_size")  # a limit, not a flag


def test_json_has_every_flag_and_limit() -> None:
    caps = Capabilities(search_global=True, max_page_size=200)
    data = json.loads(caps.to_json(backend="x"))
    assert data["backend"] == "x"
    assert set(data["flags"]) == set(FLAG_DOCS)
    assert set(data["limits"]) == set(LIMIT_DOCS)
    assert data["flags"]["search_global"] is True
    assert data["limits"]["max_page_size"] == 200
    assert data["limits"]["max_messages_per_read"] is None


def test_table_lists_every_name_with_its_value() -> None:
    table = Capabilities(trio=True, max_bulk_messages=100).to_table()
    lines = {line.split()[0]: line.split()[1] for line in table.splitlines()[2:]}
    assert lines["trio"] == "yes"
    assert lines["delete_message"] == "no"
    assert lines["max_bulk_messages"] == "100"
    assert lines["max_page_size"] == "none"
    assert set(lines) == set(FLAG_DOCS) | set(LIMIT_DOCS)
