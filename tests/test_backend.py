"""The contract's generic rules, checked on a recording backend (no real store)."""

from __future__ import annotations

import warnings
from datetime import UTC, datetime
from typing import Any

import pytest

from memory_core import (
    CapabilityWarning,
    InvalidRequestError,
    MissingIdentifierError,
    NotSupportedError,
    SessionRequiredError,
    TransportError,
)

from .fakes import RecordingBackend

pytestmark = pytest.mark.anyio


def hook_names(backend: RecordingBackend) -> list[str]:
    return [name for name, _ in backend.calls]


async def test_connects_lazily_once_and_refuses_after_close() -> None:
    backend = RecordingBackend()
    await backend.get_conversation("s")
    await backend.get_conversation("s")
    assert backend.connects == 1
    await backend.close()
    with pytest.raises(TransportError, match="closed"):
        await backend.get_conversation("s")


async def test_unclaimed_flag_raises_not_supported_with_all_fields() -> None:
    backend = RecordingBackend()
    with pytest.raises(NotSupportedError) as info:
        await backend.delete_message("00000000-0000-0000-0000-000000000000")
    error = info.value
    assert (error.backend, error.method) == ("recording", "delete_message")
    assert error.message and error.workaround
    assert backend.calls == []


async def test_dropped_argument_warns_once_then_is_dropped() -> None:
    backend = RecordingBackend()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        await backend.add_message("s", "user", "a", metadata={"k": 1})
        await backend.add_message("s", "user", "b", metadata={"k": 2})
    assert [type(w.message) for w in caught] == [CapabilityWarning]
    assert "metadata" in str(caught[0].message)
    sent = [req for name, req in backend.calls if name == "add_message"]
    assert [r.metadata for r in sent] == [{}, {}]


async def test_strict_turns_a_dropped_argument_into_an_error_and_writes_nothing() -> None:
    backend = RecordingBackend(strict=True)
    with pytest.raises(NotSupportedError, match="idempotency_key"):
        await backend.add_message("s", "user", "a", idempotency_key="k1")
    assert "add_message" not in hook_names(backend)


async def test_limit_above_cap_is_clamped_with_a_warning() -> None:
    backend = RecordingBackend()
    with pytest.warns(CapabilityWarning, match="clamped to 200"):
        await backend.get_conversation("s", limit=1000)
    await backend.get_conversation("s")
    limits = [req.limit for name, req in backend.calls if name == "get_conversation"]
    assert limits == [200, 200]


async def test_since_is_applied_client_side_without_server_side_since() -> None:
    backend = RecordingBackend()
    for text in ("one", "two", "three"):
        await backend.add_message("s", "user", text)
    conversation = await backend.get_conversation("s", since=datetime(2026, 1, 1, 0, 0, tzinfo=UTC))
    assert [m.content for m in conversation.messages] == ["two", "three"]


async def test_search_without_session_needs_search_global() -> None:
    backend = RecordingBackend()
    with pytest.raises(SessionRequiredError) as info:
        await backend.search_messages("hello")
    assert isinstance(info.value, ValueError) and isinstance(info.value, NotSupportedError)


async def test_metadata_filters_are_never_silently_ignored() -> None:
    backend = RecordingBackend()
    with pytest.raises(NotSupportedError, match="metadata_filters"):
        await backend.search_messages("x", session_id="s", metadata_filters={"a": 1})


async def test_missing_ids_raise_type_error_for_crud_and_value_error_for_context() -> None:
    backend = RecordingBackend()
    with pytest.raises(TypeError):
        await backend.add_message(role="user", content="x")
    with pytest.raises(MissingIdentifierError):
        await backend.clear_session()
    with pytest.raises(ValueError):
        await backend.get_context("q")
    assert backend.calls == []


async def test_session_id_wins_over_conversation_id() -> None:
    backend = RecordingBackend()
    await backend.get_conversation("named", conversation_id="6f1c2a55-7d0e-4c1e-9a53-1b2f3c4d5e6f")
    target = backend.calls[-1][1].target
    assert target.handle == "named"


async def test_bulk_is_cut_into_ordered_chunks_and_empty_bulk_sends_nothing() -> None:
    backend = RecordingBackend()
    assert await backend.bulk_add_messages("s", []) == []
    assert backend.calls == []
    progress: list[tuple[int, int]] = []
    items = [{"role": "user", "content": str(i)} for i in range(250)]
    stored = await backend.bulk_add_messages(
        "s", items, on_progress=lambda a, b: progress.append((a, b))
    )
    chunks = [req.messages for name, req in backend.calls if name == "add_messages"]
    assert [len(c) for c in chunks] == [100, 100, 50]
    assert [m.content for m in stored] == [str(i) for i in range(250)]
    assert progress == [(100, 250), (200, 250), (250, 250)]


async def test_bad_batch_item_names_its_position_and_writes_nothing() -> None:
    backend = RecordingBackend()
    items = [{"role": "user", "content": "ok"}, {"role": "wizard", "content": "no"}]
    with pytest.raises(InvalidRequestError) as info:
        await backend.add_messages_batch("s", items)
    assert info.value.argument == "messages[1].role"
    assert backend.calls == []


async def test_multi_tenant_needs_the_capability() -> None:
    with pytest.raises(NotSupportedError, match="multi_tenant"):
        RecordingBackend(multi_tenant=True)


async def test_wait_for_extraction_is_true_without_extraction_status() -> None:
    assert await RecordingBackend().wait_for_extraction("s") is True


async def test_explicit_mentions_need_explicit_mode() -> None:
    backend = RecordingBackend()
    with pytest.raises(InvalidRequestError) as info:
        await backend.add_message("s", "user", "x", explicit_mentions=["Acme"])
    assert info.value.argument == "explicit_mentions"


async def test_a_dropped_argument_warns_once_per_backend_object_and_method() -> None:
    first, second = RecordingBackend(), RecordingBackend()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        await first.add_message("s", "user", "a", metadata={"k": 1})
        await first.add_message("s", "user", "b", metadata={"other": "value"})  # same method
        await first.add_messages_batch(  # same argument, another method
            "s", [{"role": "user", "content": "c", "metadata": {"k": 3}}]
        )
        await first.add_messages_batch(
            "s", [{"role": "user", "content": "d", "metadata": {"k": 4}}]
        )
        await second.add_message("s", "user", "e", metadata={"k": 5})  # another object
    said = [str(w.message) for w in caught if w.category is CapabilityWarning]
    assert [text.split(":")[0] for text in said] == [
        "recording.add_message",
        "recording.add_messages_batch",
        "recording.add_message",
    ]
    assert all("'metadata'" in text for text in said)


async def test_a_failure_after_two_chunks_says_both_were_written() -> None:
    backend = RecordingBackend()  # chunks of at most 100
    real = backend.store.add_messages

    async def third_chunk_fails(req: Any) -> Any:
        if len(hook_names(backend)) == 2:
            raise TransportError("connection reset")
        return await real(req)

    backend.store.add_messages = third_chunk_fails
    items = [{"role": "user", "content": str(i)} for i in range(250)]
    with pytest.raises(TransportError) as raised:
        await backend.add_messages_batch("s", items)
    assert hook_names(backend) == ["add_messages", "add_messages"]
    assert raised.value.written == 200  # every message stored before it, not the last chunk
