"""Rules the contract applies once for every backend: hook checks at class definition,
capability-scoped arguments, search caps, keyword-only requests and structured errors."""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any
from uuid import uuid4

import pytest

from memory_core import (
    Capabilities,
    CapabilityWarning,
    MemoryCoreError,
    NotSupportedError,
    RateLimitedError,
    StoreError,
    TransportError,
)
from memory_core import errors as errors_module
from memory_core import requests as rq
from memory_core.interface import HOOKS_FOR_FLAG, Store

from .fakes import RecordingBackend, RecordingStore, public

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("flag", sorted(HOOKS_FOR_FLAG))
def test_a_flag_without_its_hook_fails_when_the_class_is_defined(flag: str) -> None:
    caps = dataclasses.replace(RecordingStore.capabilities, **{flag: True})
    unimplemented = {hook: getattr(Store, hook) for hook in HOOKS_FOR_FLAG[flag]}
    with pytest.raises(TypeError) as info:
        type("Liar", (RecordingStore,), {"capabilities": caps, **unimplemented})
    text = str(info.value)
    assert "Liar" in text and flag in text
    assert all(hook in text for hook in HOOKS_FOR_FLAG[flag])


def test_a_flag_with_its_hooks_is_accepted() -> None:
    async def hook(self: Any, req: Any) -> bool:
        return False

    caps = dataclasses.replace(RecordingStore.capabilities, delete_message=True)
    honest = type("Honest", (RecordingStore,), {"capabilities": caps, "delete_message": hook})
    assert honest.capabilities.delete_message


def test_multi_tenant_implies_user_scoped_calls() -> None:
    assert Capabilities(multi_tenant=True).user_scoped_calls is True
    assert Capabilities().user_scoped_calls is False


async def test_user_identifier_is_dropped_once_where_calls_are_not_user_scoped() -> None:
    backend = RecordingBackend()  # user_scoped_calls is False
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        await backend.add_message("s", "user", "a", user_identifier="alice")
        await backend.add_message("s", "user", "b", user_identifier="alice")
        await backend.list_conversations(user_identifier="alice")
    assert len(caught) == 1 and caught[0].category is CapabilityWarning
    assert caught[0].filename == __file__
    sent = [req for name, req in backend.calls if name in ("add_message", "list_conversations")]
    assert [
        r.user_identifier if name != "add_message" else r.target.user_identifier
        for name, r in zip(["add_message", "add_message", "list"], sent, strict=True)
    ] == [
        None,
        None,
        "alice",
    ]


async def test_strict_refuses_an_unscoped_user_before_the_hook() -> None:
    backend = RecordingBackend(strict=True)
    with pytest.raises(NotSupportedError) as info:
        await backend.get_conversation("s", user_identifier="alice")
    assert info.value.method == "get_conversation"
    assert "user_identifier" in info.value.message
    assert backend.calls == []


async def test_search_hits_are_clamped_to_the_declared_cap() -> None:
    class Capped(RecordingStore):
        capabilities = dataclasses.replace(RecordingStore.capabilities, max_search_hits=7)

    backend = public(Capped)()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        await backend.search_messages("x", session_id="s", limit=50)
        await backend.search_messages("x", session_id="s", limit=7)
    sent = [req.limit for name, req in backend.calls if name == "search_messages"]
    assert sent == [7, 7]
    assert len(caught) == 1 and "clamped to 7" in str(caught[0].message)
    assert caught[0].filename == __file__


def test_requests_are_keyword_only() -> None:
    with pytest.raises(TypeError):
        rq.Scope("alice", "alice")  # type: ignore[misc]
    with pytest.raises(TypeError):
        rq.DeleteMessage(uuid4(), rq.UNSCOPED)  # type: ignore[misc]
    scope = rq.Scope(user_identifier="alice", tenant="alice")
    target = rq.Target(session_id="s", conversation_id=None, scope=scope)
    assert (target.user_identifier, target.tenant, target.handle) == ("alice", "alice", "s")


def test_errors_say_whether_to_retry_and_whether_a_write_may_have_happened() -> None:
    assert MemoryCoreError("x").retryable is False
    assert MemoryCoreError("x").maybe_applied is False
    assert TransportError("x").retryable is True
    assert TransportError("closed", retryable=False).retryable is False
    assert RateLimitedError("x", retry_after=1.0).retryable is True
    assert StoreError("x").retryable is False
    lost = TransportError("lost during commit", maybe_applied=True)
    assert lost.maybe_applied is True and str(lost) == "lost during commit"


def test_public_warnings_and_errors_live_in_errors_module() -> None:
    from memory_core import backend as backend_module

    assert errors_module.CapabilityWarning is CapabilityWarning
    assert backend_module.SessionRequiredError is errors_module.SessionRequiredError
    assert issubclass(errors_module.SessionRequiredError, NotSupportedError)


async def test_an_unscoped_user_identifier_warns_once_for_each_method_it_is_dropped_from() -> None:
    backend = RecordingBackend()  # user_scoped_calls is False
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            await backend.add_message("s", "user", "a", user_identifier="alice")
            await backend.get_conversation("s", user_identifier="bob")
            await backend.search_messages("a", session_id="s", user_identifier="carol")
    said = [str(w.message) for w in caught if w.category is CapabilityWarning]
    assert [text.split(":")[0] for text in said] == [
        "recording.add_message",
        "recording.get_conversation",
        "recording.search_messages",
    ]
    assert all("'user_identifier'" in text for text in said)
    assert all(w.filename == __file__ for w in caught)
