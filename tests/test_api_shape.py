"""The shape of the API the docs promise: ``open_backend`` returns one public class whose
methods that read or write memory are async and keyword-only after their first arguments;
``threshold`` defaults to None; the errors are memory-core errors defined in one module;
every hook takes one frozen, keyword-only request."""

from __future__ import annotations

import dataclasses
import inspect
import typing
from pathlib import Path
from typing import Any

import pytest

import memory_core
from memory_core import MemoryBackend, errors, open_backend
from memory_core.interface import Store

# the public methods that are not coroutines: constructors and a description of the URL
SYNC = {"describe", "over"}
# the arguments each async method takes by position; every other one is keyword-only
POSITIONAL = {
    "add_entity": ["name", "type"],
    "add_message": ["session_id", "role", "content"],
    "add_messages_batch": ["session_id", "messages"],
    "bulk_add_messages": ["session_id", "messages"],
    "clear_session": ["session_id"],
    "close": [],
    "connect": [],
    "create_conversation": ["session_id"],
    "delete_entity": ["entity_id"],
    "delete_message": ["message_id"],
    "expire_conversations": ["older_than"],
    "find_entities": ["identifier", "limit"],
    "forget_user": ["user_identifier"],
    "get_context": ["query"],
    "get_conversation": ["session_id"],
    "get_conversation_summary": ["session_id"],
    "get_extraction_status": ["session_id"],
    "get_observations": ["session_id"],
    "get_reflections": ["session_id"],
    "list_conversations": [],
    "list_conversations_page": [],
    "list_sessions": [],
    "search_messages": ["query"],
    "stats": [],
    "wait_for_extraction": ["session_id"],
    "search_entities": ["query"],
    "get_entity": ["entity_id"],
    "get_entity_by_name": ["name"],
    "update_entity": ["entity_id"],
    "merge_entities": ["source_id", "target_id"],
    "add_preference": ["category", "preference"],
    "search_preferences": ["query"],
    "list_preferences": ["category"],
    "supersede_preference": ["old_id", "new_id"],
    "delete_preference": ["preference_id"],
    "add_fact": ["subject", "predicate", "object"],
    "search_facts": ["query"],
    "facts_about": ["subject"],
    "delete_fact": ["fact_id"],
    "add_relationship": ["source_id", "target_id", "type"],
    "list_relationships": ["entity_id"],
    "related_entities": ["entity_id"],
    "delete_relationship": ["relationship_id"],
    "start_trace": ["session_id", "task"],
    "add_step": ["trace_id"],
    "record_tool_call": ["step_id", "tool_name", "arguments"],
    "complete_trace": ["trace_id"],
    "link_trace": ["trace_id"],
    "get_trace": ["trace_id"],
    "list_traces": ["session_id"],
    "list_traces_page": ["session_id"],
    "tool_stats": ["tool_name"],
    "similar_traces": ["task"],
    "search_steps": ["query"],
}


def _public_methods() -> dict[str, object]:
    return {
        name: value
        for name, value in inspect.getmembers(MemoryBackend)
        if not name.startswith("_") and callable(value)
    }


def test_every_method_that_reads_or_writes_memory_is_async() -> None:
    methods = _public_methods()
    synchronous = {name for name, v in methods.items() if not inspect.iscoroutinefunction(v)}
    assert synchronous == SYNC
    assert set(methods) - SYNC == set(POSITIONAL)


def test_arguments_after_the_first_ones_are_keyword_only() -> None:
    found = {}
    for name in POSITIONAL:
        parameters = list(inspect.signature(getattr(MemoryBackend, name)).parameters.values())
        found[name] = [
            p.name
            for p in parameters[1:]  # self
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
        ]
    assert found == POSITIONAL


def test_search_has_no_threshold_unless_given() -> None:
    threshold = inspect.signature(MemoryBackend.search_messages).parameters["threshold"]
    assert threshold.default is None and threshold.kind is threshold.KEYWORD_ONLY


ERRORS = [
    "InvalidRequestError",
    "InvalidArgumentTypeError",
    "MissingIdentifierError",
    "NotFoundError",
    "AuthenticationError",
    "RateLimitedError",
    "TransportError",
    "StoreError",
    "ConfigurationError",
    "NotSupportedError",
]


def test_the_documented_errors_are_memory_core_errors_of_one_module() -> None:
    for name in ERRORS:
        error = getattr(memory_core, name)
        assert issubclass(error, errors.MemoryCoreError), name
        assert error.__module__ == errors.__name__, name
    assert issubclass(errors.InvalidRequestError, ValueError)
    assert issubclass(errors.InvalidArgumentTypeError, TypeError)
    assert issubclass(errors.MissingIdentifierError, TypeError)
    assert issubclass(errors.MissingIdentifierError, ValueError)
    assert memory_core.CapabilityWarning.__module__ == errors.__name__


def test_every_hook_takes_one_frozen_keyword_only_request() -> None:
    hooks = {
        name: hook
        for name, hook in inspect.getmembers(Store)
        if not name.startswith("_") and inspect.iscoroutinefunction(hook)
    }
    assert len(hooks) >= 15
    for name, hook in hooks.items():
        hints = typing.get_type_hints(hook)
        hints.pop("return", None)
        if name in ("connect", "close"):
            assert hints == {}
            continue
        [request] = hints.values()
        assert dataclasses.is_dataclass(request), name
        assert vars(request)["__dataclass_params__"].frozen, name
        assert all(f.kw_only for f in dataclasses.fields(request)), name


@pytest.mark.parametrize(
    ("url", "options"),
    [
        ("memory://", {}),
        ("sqlite:///{tmp}/store.db", {}),
        ("bolt://127.0.0.1:9", {"auth": ("neo4j", "secret")}),
        ("neo4j://127.0.0.1:9", {"auth": ("neo4j", "secret")}),
        ("nams+https://nams.test/v1", {"api_key": "key"}),
        ("https://nams.test/v1", {"backend": "nams", "api_key": "key"}),
    ],
)
def test_open_backend_returns_the_one_public_class(
    url: str, options: dict[str, Any], tmp_path: Path
) -> None:
    backend = open_backend(url.format(tmp=tmp_path), **options)  # nothing connects yet
    assert type(backend) is MemoryBackend


def test_no_store_folder_holds_a_subclass_of_the_public_class() -> None:
    """A store folder holds stores: the public class is only ever ``MemoryBackend``
    itself, wrapping a store (``open_backend`` or ``MemoryBackend.over``)."""
    import importlib
    import pkgutil

    import memory_core.backends

    found = []
    for module in pkgutil.walk_packages(memory_core.backends.__path__, "memory_core.backends."):
        loaded = importlib.import_module(module.name)
        found += [
            f"{module.name}.{name}"
            for name, value in vars(loaded).items()
            if isinstance(value, type)
            and issubclass(value, MemoryBackend)
            and value.__module__ == module.name
        ]
    assert found == []
