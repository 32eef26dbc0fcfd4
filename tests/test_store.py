"""``memory_core.store``, the store authors' face: every name it promises is there, every
name the built-in stores import from it is promised, and each is its home module's object
(a re-export, not a copy)."""

from __future__ import annotations

import ast
import importlib
import inspect
import sys
import types
from pathlib import Path

import pytest

import memory_core
from memory_core import store

BACKENDS = Path(memory_core.__file__).parent / "backends"

# name in memory_core.store -> (home module, name there; None: the module itself)
HOMES: dict[str, tuple[str, str | None]] = {
    "transfer_records": ("memory_core.archive.records", None),
    "Record": ("memory_core.archive.records", "Record"),
    "parse_stamp": ("memory_core.archive.records", "parse_stamp"),
    "TransferReport": ("memory_core.archive.report", "TransferReport"),
    "ImportState": ("memory_core.archive.hooks", "ImportState"),
    "BulkTransfer": ("memory_core.archive.hooks", "BulkTransfer"),
    "own_id": ("memory_core.archive.hooks", "own_id"),
    "Store": ("memory_core.interface", "Store"),
    "DEFAULTED_HOOKS": ("memory_core.interface", "DEFAULTED_HOOKS"),
    "requests": ("memory_core.requests", None),
    "foreign": ("memory_core.foreign", None),
    "nams_wire": ("memory_core.nams_wire", None),
    "Capabilities": ("memory_core.capabilities", "Capabilities"),
    "Limits": ("memory_core.limits", "Limits"),
    "DEFAULT_LIMITS": ("memory_core.limits", "DEFAULT_LIMITS"),
    "Embedder": ("memory_core.embedding", "Embedder"),
    "Erased": ("memory_core.erasure", "Erased"),
    "encode_cursor": ("memory_core.cursors", "encode_cursor"),
    "decode_cursor": ("memory_core.cursors", "decode_cursor"),
    "cursor_error": ("memory_core.cursors", "cursor_error"),
    "canonical_uuid": ("memory_core.requests", "canonical_uuid"),
    "text_score": ("memory_core.scoring", "text_score"),
    "query_terms": ("memory_core.scoring", "query_terms"),
    "candidate_pool": ("memory_core.scoring", "candidate_pool"),
    "matches": ("memory_core.filters", "matches"),
    "metadata_json": ("memory_core.validation", "metadata_json"),
    "parse_uuid": ("memory_core.validation", "parse_uuid"),
    "preview": ("memory_core.summary", "preview"),
    "format_context": ("memory_core.summary", "format_context"),
    "redact_url": ("memory_core.settings", "redact_url"),
    "default_store_path": ("memory_core.settings", "default_store_path"),
    "Message": ("memory_core.models", "Message"),
    "Conversation": ("memory_core.models", "Conversation"),
    "trusted": ("memory_core.models", "trusted"),
    "StoreError": ("memory_core.errors", "StoreError"),
    "InvalidRequestError": ("memory_core.errors", "InvalidRequestError"),
    "NotFoundError": ("memory_core.errors", "NotFoundError"),
    "VERSION": ("memory_core.version", "VERSION"),
}


def _imported_from_store(path: Path) -> list[tuple[str, int]]:
    """``(name, line)`` of every ``from memory_core.store import name`` in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return [
        (alias.name, node.lineno)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == "memory_core.store"
        for alias in node.names
    ]


def test_every_promised_name_is_there() -> None:
    missing = [name for name in store.__all__ if not hasattr(store, name)]
    assert missing == []
    assert len(set(store.__all__)) == len(store.__all__)


def test_a_star_import_gives_exactly_the_promised_names() -> None:
    namespace: dict[str, object] = {}
    exec("from memory_core.store import *", namespace)
    assert set(namespace) - {"__builtins__"} == set(store.__all__)


def test_the_builtin_stores_import_only_promised_names() -> None:
    files = sorted(BACKENDS.rglob("*.py"))
    imported = {
        (str(path.relative_to(BACKENDS)), line, name)
        for path in files
        for name, line in _imported_from_store(path)
    }
    assert len({name for _, _, name in imported}) > 10  # the scan found the stores' imports
    unpromised = sorted(entry for entry in imported if entry[2] not in store.__all__)
    assert unpromised == []


@pytest.mark.parametrize(("name", "home"), sorted(HOMES.items()))
def test_a_name_is_its_home_modules_object(name: str, home: tuple[str, str | None]) -> None:
    module_name, attribute = home
    module = importlib.import_module(module_name)
    expected = module if attribute is None else getattr(module, attribute)
    assert name in store.__all__
    assert getattr(store, name) is expected


def test_every_class_function_and_module_is_re_exported_from_its_home() -> None:
    checked = 0
    for name in store.__all__:
        value = getattr(store, name)
        if isinstance(value, types.ModuleType):
            assert sys.modules[value.__name__] is value, name
        elif inspect.isclass(value) or inspect.isfunction(value):
            home = sys.modules[value.__module__]
            assert value.__module__.startswith("memory_core."), name
            assert value.__module__ != store.__name__, name  # re-exported, never defined here
            assert getattr(home, value.__qualname__) is value, name
        else:
            continue
        checked += 1
    assert checked > 40
