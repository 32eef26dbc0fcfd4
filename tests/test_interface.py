"""The ``Store`` interface itself: required hooks, the shared options it checks, the
capability/hook check made when a subclass is defined, and the working defaults."""

from __future__ import annotations

from typing import Any

import pytest

from memory_core import Capabilities, Conversation, Message, MessageRole
from memory_core import requests as rq
from memory_core.embedding import HashingEmbedder
from memory_core.errors import (
    ConfigurationError,
    InvalidArgumentTypeError,
    NotSupportedError,
)
from memory_core.interface import DEFAULTED_HOOKS, HOOKS_FOR_FLAG, Store
from memory_core.limits import DEFAULT_LIMITS, Limits
from memory_core.summary import format_context

from .fakes import RecordingStore

REQUIRED = (
    "connect",
    "close",
    "add_message",
    "add_messages",
    "create_conversation",
    "get_conversation",
    "list_conversations",
    "search_messages",
    "clear_session",
)


def test_the_required_hooks_are_the_abstract_methods() -> None:
    assert Store.__abstractmethods__ == frozenset(REQUIRED)
    assert not set(DEFAULTED_HOOKS) & Store.__abstractmethods__


@pytest.mark.parametrize("hook", REQUIRED)
def test_a_store_missing_a_required_hook_cannot_be_instantiated(hook: str) -> None:
    # RecordingStore implements every required hook: take one away again
    incomplete = type("Incomplete", (RecordingStore,), {hook: Store.__dict__[hook]})
    with pytest.raises(TypeError, match=hook):
        incomplete()


def test_a_complete_store_gets_the_shared_defaults() -> None:
    store = RecordingStore()
    assert store.multi_tenant is False
    assert store.embedder is None
    assert store.limits is DEFAULT_LIMITS


def test_the_shared_options_are_kept() -> None:
    limits = Limits(max_content_chars=10)
    embedder = HashingEmbedder(16)
    store = RecordingStore(multi_tenant=True, embedder=embedder, limits=limits)
    assert (store.multi_tenant, store.embedder, store.limits) == (True, embedder, limits)


@pytest.mark.parametrize("value", [1, 0, "yes", None])
def test_multi_tenant_must_be_a_bool(value: Any) -> None:
    with pytest.raises(InvalidArgumentTypeError) as caught:
        RecordingStore(multi_tenant=value)
    assert caught.value.argument == "multi_tenant"


@pytest.mark.parametrize("limits", [{"max_content_chars": 10}, 10, DEFAULT_LIMITS.as_dict()])
def test_limits_must_be_a_limits_object(limits: Any) -> None:
    with pytest.raises(ConfigurationError, match=r"limits must be a memory_core\.Limits"):
        RecordingStore(limits=limits)


@pytest.mark.parametrize("embedder", [object(), "hashing", HashingEmbedder])
def test_an_embedder_needs_dimensions_and_embed(embedder: Any) -> None:
    with pytest.raises(ConfigurationError, match="embedder"):
        RecordingStore(embedder=embedder)


class SmallKeyStore(RecordingStore):
    name = "small-keys"
    capabilities = Capabilities(max_indexed_bytes=100)


def test_identifiers_longer_than_the_store_can_index_are_refused() -> None:
    with pytest.raises(ConfigurationError, match=r"max_identifier_bytes=1024 .* \(100 bytes\)"):
        SmallKeyStore()
    assert SmallKeyStore(limits=Limits(max_identifier_bytes=100)).limits.max_identifier_bytes == (
        100
    )


def test_claiming_a_flag_without_its_hook_fails_when_the_class_is_defined() -> None:
    flag, hooks = next(iter(HOOKS_FOR_FLAG.items()))
    with pytest.raises(TypeError, match=f"{flag} needs {hooks[0]}\\(\\)"):
        type("Boastful", (RecordingStore,), {"capabilities": Capabilities(**{flag: True})})


def test_a_capabilities_property_is_not_checked_at_class_definition() -> None:
    flag, _ = next(iter(HOOKS_FOR_FLAG.items()))
    caps = Capabilities(**{flag: True})
    cls = type("PerInstance", (RecordingStore,), {"capabilities": property(lambda self: caps)})
    assert cls().capabilities is caps


def test_describe_defaults_to_the_name_and_pool_stats_to_none() -> None:
    store = RecordingStore()
    assert store.describe() == "recording" == store.name
    assert store.pool_stats() is None
    assert store.pools() == {}


def test_pools_default_to_the_one_pool_named_by_describe() -> None:
    counts = {"idle": 1, "used": 2, "max": 4}
    cls = type("Pooled", (RecordingStore,), {"pool_stats": lambda self: counts})
    assert cls().pools() == {"recording": counts}


def test_bulk_transfer_defaults_to_none() -> None:
    assert "bulk_transfer" in DEFAULTED_HOOKS
    assert RecordingStore().bulk_transfer() is None


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("hook", "arguments"),
    [
        ("list_sessions", (None,)),
        ("delete_message", (None,)),
        ("get_reflections", (None,)),
        ("get_extraction_status", (None,)),
        ("add_entity", (None,)),
        ("find_entities", (None,)),
        ("delete_entity", (None,)),
        ("forget_user", (None,)),
    ],
)
async def test_an_optional_hook_not_implemented_raises_not_supported(
    hook: str, arguments: tuple[Any, ...]
) -> None:
    with pytest.raises(NotSupportedError) as caught:
        await getattr(RecordingStore(), hook)(*arguments)
    assert (caught.value.backend, caught.value.method) == ("recording", hook)


def _message(content: str, score: float | None = None) -> Message:
    return Message(role=MessageRole.USER, content=content, score=score)


class SearchingStore(RecordingStore):
    """Recent messages from ``get_conversation``, hits from ``search_messages``."""

    def __init__(self, recent: list[Message], hits: list[Message]) -> None:
        super().__init__()
        self.recent, self.hits = recent, hits

    async def get_conversation(self, req: rq.GetConversation) -> Conversation:
        self.calls.append(("get_conversation", req))
        return Conversation(session_id=req.target.handle, messages=self.recent[-req.limit :])

    async def search_messages(self, req: rq.SearchMessages) -> list[Message]:
        self.calls.append(("search_messages", req))
        return self.hits[: req.limit]


TARGET = rq.Target(session_id="s1", conversation_id=None, scope=rq.Scope(user_identifier="u"))


@pytest.mark.anyio
async def test_get_context_without_a_query_is_the_recent_messages() -> None:
    recent = [_message("one"), _message("two"), _message("three")]
    store = SearchingStore(recent, hits=[_message("never")])
    text = await store.get_context(
        rq.GetContext(target=TARGET, query=None, max_messages=2, max_hits=5)
    )
    assert text == format_context(recent[-2:], [])
    assert [name for name, _ in store.calls] == ["get_conversation"]
    assert store.calls[0][1] == rq.GetConversation(target=TARGET, limit=2, since=None)


@pytest.mark.anyio
async def test_get_context_with_a_query_adds_hits_not_already_recent() -> None:
    recent = [_message("the order is late"), _message("sorry about that")]
    others = [_message(f"order {n}", score=0.5) for n in range(3)]
    store = SearchingStore(recent, hits=[recent[0], others[0], others[1], others[2]])
    text = await store.get_context(
        rq.GetContext(target=TARGET, query="order", max_messages=10, max_hits=2)
    )
    assert text == format_context(recent, others[:2])
    [(_, search)] = [call for call in store.calls if call[0] == "search_messages"]
    assert search.query == "order"
    assert search.target == TARGET and search.scope == TARGET.scope
    assert search.limit == 2 + len(recent)  # room for hits that are already recent
    assert (search.threshold, search.metadata_filters, search.query_embedding) == (None, {}, None)
