"""Errors and bad input: a typed error naming the argument, and nothing written."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from memory_core import InvalidArgumentTypeError, InvalidRequestError

from ..checks import invalid
from ..harness import Harness
from ..scenarios import scenario
from .base import SuiteBase


async def _nothing_written(harness: Harness, handle: str) -> None:
    assert await harness.contents(handle) == [], "rejected input was written"


class ErrorsSuite(SuiteBase):
    """Scenarios of area ``errors``."""

    @scenario("errors.bad_role", "an unknown role is rejected naming 'role'; nothing written")
    async def test_errors_bad_role(self, harness: Harness) -> None:
        handle = await harness.new_session()
        with invalid("role"):
            await harness.backend.add_message(handle, "wizard", "x")
        with invalid("role", InvalidArgumentTypeError):
            await harness.backend.add_message(handle, 7, "x")  # type: ignore[arg-type]
        await _nothing_written(harness, handle)

    @scenario(
        "errors.content_not_str",
        "content that is not a str is rejected naming 'content'; nothing written",
    )
    async def test_errors_content_not_str(self, harness: Harness) -> None:
        handle = await harness.new_session()
        for content in (123, None, b"bytes", ["list"]):
            with invalid("content", InvalidArgumentTypeError):
                await harness.backend.add_message(handle, "user", content)  # type: ignore[arg-type]
        await _nothing_written(harness, handle)

    @scenario(
        "errors.metadata_not_json",
        "metadata with non-JSON values or keys is rejected naming 'metadata'; nothing written",
    )
    async def test_errors_metadata_not_json(self, harness: Harness) -> None:
        handle = await harness.new_session()
        bad: list[Any] = [
            {"object": object()},
            {"set": {1, 2}},
            {"nan": float("nan")},
            {"decimal": Decimal("1.5")},
            {"bytes": b"x"},
            {"nested": {"deep": [object()]}},
            {1: "int key"},
        ]
        for metadata in bad:
            with invalid("metadata"):
                await harness.backend.add_message(handle, "user", "x", metadata=metadata)
        with invalid("metadata", InvalidArgumentTypeError):
            await harness.backend.add_message(handle, "user", "x", metadata=["not", "a", "dict"])  # type: ignore[arg-type]
        await _nothing_written(harness, handle)

    @scenario(
        "errors.unencodable_text",
        "a lone surrogate (text that is not UTF-8) in content, a metadata key or value, or "
        "session_id is rejected naming the argument; nothing written",
    )
    async def test_errors_unencodable_text(self, harness: Harness) -> None:
        handle = await harness.new_session()
        lone = "\ud800"
        with invalid("content"):
            await harness.backend.add_message(handle, "user", f"half a pair {lone}")
        for metadata in ({"k": f"v{lone}"}, {f"k{lone}": "v"}, {"deep": [{"k": lone}]}):
            with invalid("metadata"):
                await harness.backend.add_message(handle, "user", "x", metadata=metadata)
        with invalid("session_id"):
            await harness.backend.add_message(f"{handle}{lone}", "user", "x")
        with invalid("session_id"):
            await harness.backend.get_conversation(f"{handle}{lone}")
        await _nothing_written(harness, handle)

    @scenario(
        "errors.huge_int",
        "a limit or offset above 2**63 - 1 (no store holds it) is rejected naming it",
    )
    async def test_errors_huge_int(self, harness: Harness) -> None:
        handle = await harness.new_session()
        with invalid("limit"):
            await harness.backend.get_conversation(handle, limit=2**63)
        with invalid("limit"):
            await harness.backend.search_messages("x", session_id=handle, limit=2**63)
        with invalid("limit"):
            await harness.backend.list_conversations(limit=2**63)
        if harness.caps.list_sessions:
            with invalid("offset"):
                await harness.backend.list_sessions(offset=2**63)
            with invalid("limit"):
                await harness.backend.list_sessions(limit=2**63)

    @scenario("errors.limit_not_positive", "limit <= 0 is rejected naming 'limit'")
    async def test_errors_limit_not_positive(self, harness: Harness) -> None:
        handle = await harness.new_session()
        backend = harness.backend
        for limit in (0, -1):
            with invalid("limit"):
                await backend.get_conversation(handle, limit=limit)
            with invalid("limit"):
                await backend.search_messages("x", session_id=handle, limit=limit)
            with invalid("limit"):
                await backend.list_conversations(limit=limit)
            if harness.caps.list_sessions:
                with invalid("limit"):
                    await backend.list_sessions(limit=limit)

    @scenario("errors.limit_wrong_type", "a limit that is not an int is a TypeError naming 'limit'")
    async def test_errors_limit_wrong_type(self, harness: Harness) -> None:
        handle = await harness.new_session()
        for limit in ("5", 2.5, True):
            with invalid("limit", InvalidArgumentTypeError):
                await harness.backend.get_conversation(handle, limit=limit)  # type: ignore[arg-type]
            with invalid("limit", InvalidArgumentTypeError):
                await harness.backend.search_messages("x", session_id=handle, limit=limit)  # type: ignore[arg-type]
            with invalid("limit", InvalidArgumentTypeError):
                await harness.backend.list_conversations(limit=limit)  # type: ignore[arg-type]

    @scenario(
        "errors.conversation_id_not_uuid",
        "a conversation_id that is not a UUID is rejected naming 'conversation_id'",
    )
    async def test_errors_conversation_id_not_uuid(self, harness: Harness) -> None:
        for bad in ("not-a-uuid", "1234"):
            with invalid("conversation_id"):
                await harness.backend.get_conversation(conversation_id=bad)
            with invalid("conversation_id"):
                await harness.backend.add_message(conversation_id=bad, role="user", content="x")
        with invalid("conversation_id", InvalidArgumentTypeError):
            await harness.backend.get_conversation(conversation_id=42)

    @scenario(
        "errors.session_id_wrong_type",
        "a session_id that is not a non-empty str is rejected naming 'session_id'",
    )
    async def test_errors_session_id_wrong_type(self, harness: Harness) -> None:
        with invalid("session_id", InvalidArgumentTypeError):
            await harness.backend.add_message(42, "user", "x")  # type: ignore[arg-type]
        with invalid("session_id"):
            await harness.backend.get_conversation("   ")

    @scenario(
        "errors.batch_all_or_nothing",
        "a batch with one bad item is rejected naming it and writes none of the batch",
    )
    async def test_errors_batch_all_or_nothing(self, harness: Harness) -> None:
        handle = await harness.new_session()
        good = {"role": "user", "content": "fine"}
        with invalid("messages[1].role"):
            await harness.backend.add_messages_batch(
                handle, [good, {"role": "nobody", "content": "x"}]
            )
        with invalid("messages[2].content", InvalidArgumentTypeError):
            await harness.backend.bulk_add_messages(
                handle, [good, good, {"role": "user", "content": None}]
            )
        with invalid("messages[0]"):
            await harness.backend.add_messages_batch(handle, [{**good, "colour": "red"}])
        with invalid("messages", InvalidArgumentTypeError):
            await harness.backend.add_messages_batch(handle, "not a list")  # type: ignore[arg-type]
        await _nothing_written(harness, handle)

    @scenario(
        "errors.search_arguments",
        "an empty query or a threshold outside 0..1 is rejected naming the argument",
    )
    async def test_errors_search_arguments(self, harness: Harness) -> None:
        handle = await harness.new_session()
        for query in ("", "   "):
            with invalid("query"):
                await harness.backend.search_messages(query, session_id=handle)
        for threshold in (1.5, -0.1):
            with invalid("threshold"):
                await harness.backend.search_messages("x", session_id=handle, threshold=threshold)
        with invalid("threshold", InvalidArgumentTypeError):
            await harness.backend.search_messages("x", session_id=handle, threshold="high")  # type: ignore[arg-type]

    @scenario("errors.bad_since", "a since that is not a datetime is rejected naming 'since'")
    async def test_errors_bad_since(self, harness: Harness) -> None:
        handle = await harness.new_session()
        with invalid("since"):
            await harness.backend.get_conversation(handle, since="yesterday")  # type: ignore[arg-type]
        with invalid("since", InvalidArgumentTypeError):
            await harness.backend.get_conversation(handle, since=12345)  # type: ignore[arg-type]

    @scenario(
        "errors.bad_extraction_mode",
        "an unknown extraction_mode, or mentions outside explicit mode, are rejected",
    )
    async def test_errors_bad_extraction_mode(self, harness: Harness) -> None:
        handle = await harness.new_session()
        with invalid("extraction_mode"):
            await harness.backend.add_message(handle, "user", "x", extraction_mode="magic")  # type: ignore[arg-type]
        with invalid("explicit_mentions"):
            await harness.backend.add_message(
                handle, "user", "x", extraction_mode="auto", explicit_mentions=["Ann"]
            )
        await _nothing_written(harness, handle)

    @scenario(
        "errors.message_id_wrong_type",
        "delete_message with a non-str, non-UUID id is a TypeError naming 'message_id'",
        requires="delete_message",
    )
    async def test_errors_message_id_wrong_type(self, harness: Harness) -> None:
        with invalid("message_id", InvalidArgumentTypeError):
            await harness.backend.delete_message(12345)

    @scenario(
        "errors.entity_type",
        "an unknown entity type is rejected naming 'type'",
        requires="entities",
    )
    async def test_errors_entity_type(self, harness: Harness) -> None:
        with invalid("type"):
            await harness.backend.add_entity("Somebody", "ALIEN")
        with invalid("name"):
            await harness.backend.add_entity("  ", "PERSON")

    @scenario(
        "errors.list_sessions_order",
        "an unknown order_by or order_dir is rejected naming it",
        requires="list_sessions",
    )
    async def test_errors_list_sessions_order(self, harness: Harness) -> None:
        with invalid("order_by"):
            await harness.backend.list_sessions(order_by="colour")
        with invalid("order_dir"):
            await harness.backend.list_sessions(order_dir="sideways")
        with invalid("offset"):
            await harness.backend.list_sessions(offset=-1)

    @scenario(
        "errors.are_value_errors",
        "bad values are ValueErrors and wrong types are TypeErrors (builtin compatibility)",
    )
    async def test_errors_are_value_errors(self, harness: Harness) -> None:
        handle = await harness.new_session()
        try:
            await harness.backend.add_message(handle, "wizard", "x")
        except InvalidRequestError as exc:
            assert isinstance(exc, ValueError)
        else:
            raise AssertionError("a bad role was accepted")
        try:
            await harness.backend.get_conversation(handle, limit="2")  # type: ignore[arg-type]
        except InvalidArgumentTypeError as exc:
            assert isinstance(exc, TypeError)
        else:
            raise AssertionError("a str limit was accepted")
