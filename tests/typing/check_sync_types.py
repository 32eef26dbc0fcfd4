"""Static checks of the blocking facade's types, run by ``mypy --strict`` in
tests/typing/test_typing.py. Not a test module (pytest does not collect it) and never run.

``assert_type(expr, T)`` is an error under mypy unless the inferred type of ``expr`` is
exactly ``T``. ``Any`` is not ``T``: a blocking method that degrades to ``Any`` (as the
``setattr``-generated methods did) fails here, so this file also proves that no method
is untyped. Every public blocking method is called below (test_typing.py checks that), and
the ``type: ignore`` lines fail under ``--strict`` (unused ignore) if the facade starts
accepting anything: unknown names, unknown keywords or wrongly typed arguments.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, assert_type
from uuid import UUID

from memory_core import (
    Capabilities,
    Conversation,
    ConversationPage,
    ConversationSummary,
    Entity,
    ErasureReport,
    ExpiryReport,
    ExtractionStatus,
    Fact,
    MemoryBackend,
    Message,
    Preference,
    ReasoningStep,
    ReasoningTrace,
    Relationship,
    SessionInfo,
    StoreStats,
    ToolCall,
    ToolCallStatus,
    ToolStats,
    TracePage,
)
from memory_core.sync import SyncMemoryBackend, open_backend


def check_open() -> None:
    assert_type(open_backend("memory://"), SyncMemoryBackend)
    assert_type(open_backend("memory://", strict=True, portal_backend="trio"), SyncMemoryBackend)
    with open_backend("memory://") as memory:
        assert_type(memory, SyncMemoryBackend)


def check_methods(memory: SyncMemoryBackend, conversation_id: UUID) -> None:
    # lifecycle
    assert_type(memory.connect(), None)
    assert_type(memory.close(), None)
    # writes
    assert_type(memory.add_message("s", "user", "x"), Message)
    assert_type(
        memory.add_message(
            conversation_id=conversation_id,
            role="assistant",
            content="x",
            metadata={"k": 1},
            extraction_mode="skip",
            idempotency_key="k",
        ),
        Message,
    )
    assert_type(
        memory.add_messages_batch("s", [{"role": "user", "content": "x"}], batch_size=10),
        list[Message],
    )
    assert_type(
        memory.bulk_add_messages("s", [{"role": "user", "content": "x"}], batch_size=10),
        list[Message],
    )
    assert_type(memory.create_conversation("s", title="t"), Conversation)
    # reads
    assert_type(memory.get_conversation("s", limit=5, since=datetime.now(UTC)), Conversation)
    assert_type(memory.list_conversations(limit=5), list[Conversation])
    assert_type(memory.list_conversations_page(limit=5, cursor=None), ConversationPage)
    page = memory.list_conversations_page(user_identifier="u")
    assert_type(page.next_cursor, str | None)
    assert_type(memory.list_conversations_page(cursor=page.next_cursor), ConversationPage)
    assert_type(memory.list_sessions(prefix="s", order_dir="asc"), list[SessionInfo])
    assert_type(memory.search_messages("x", session_id="s", threshold=0.5), list[Message])
    assert_type(memory.get_context("x", session_id="s", max_hits=2), str)
    assert_type(memory.get_conversation_summary("s"), ConversationSummary)
    assert_type(memory.get_observations("s"), list[dict[str, Any]])
    assert_type(memory.get_reflections("s"), list[dict[str, Any]])
    assert_type(memory.get_extraction_status("s"), ExtractionStatus)
    assert_type(memory.wait_for_extraction("s", timeout=1.0), bool)
    # deletes
    assert_type(memory.delete_message(conversation_id, cascade=False), bool)
    assert_type(memory.clear_session(conversation_id=conversation_id), bool)
    # entities
    assert_type(memory.add_entity("Ada", "person", description="d"), Entity)
    assert_type(memory.find_entities("Ada", 3, type="person"), list[Entity])
    assert_type(memory.delete_entity("e1"), bool)
    assert_type(memory.search_entities("Ada", type="person", limit=3), list[Entity])
    assert_type(memory.get_entity("e1"), Entity | None)
    assert_type(memory.get_entity_by_name("Ada", type="person"), Entity | None)
    updated = memory.update_entity("e1", name="Ada L", aliases=["Ada"], attributes={"k": 1})
    assert_type(updated, Entity)
    assert_type(memory.merge_entities("e2", "e1"), Entity)
    # long-term memory
    preference = memory.add_preference("food", "likes figs", context="lunch", confidence=0.5)
    assert_type(preference, Preference)
    assert_type(memory.search_preferences("figs", category="food"), list[Preference])
    assert_type(memory.list_preferences("food", include_superseded=True), list[Preference])
    assert_type(memory.supersede_preference("p1", "p2"), Preference)
    assert_type(memory.delete_preference("p1"), bool)
    fact = memory.add_fact("Ada", "WORKS_AT", "Acme", valid_from=datetime(2024, 1, 1, tzinfo=UTC))
    assert_type(fact, Fact)
    assert_type(memory.search_facts("Acme", as_of="2025-01-01"), list[Fact])
    assert_type(memory.facts_about("Ada", predicate="WORKS_AT"), list[Fact])
    assert_type(memory.delete_fact("f1"), bool)
    link = memory.add_relationship("e1", "e2", "KNOWS", properties={"since": 2020})
    assert_type(link, Relationship)
    assert_type(memory.list_relationships("e1", direction="out"), list[Relationship])
    assert_type(memory.related_entities("e1", depth=2, types=["KNOWS"]), list[Entity])
    assert_type(memory.delete_relationship("r1"), bool)
    # reasoning memory
    trace = memory.start_trace("s", "book a flight", metadata={"k": 1})
    assert_type(trace, ReasoningTrace)
    step = memory.add_step(trace.id, thought="search", action="call api")
    assert_type(step, ReasoningStep)
    call = memory.record_tool_call(step.id, "search", {"q": "x"}, status=ToolCallStatus.ERROR)
    assert_type(call, ToolCall)
    assert_type(memory.record_tool_call(step.id, "search", status="timeout"), ToolCall)
    assert_type(memory.complete_trace(trace.id, outcome="booked", success=True), ReasoningTrace)
    assert_type(memory.link_trace(trace.id, entity_ids=["e1"]), ReasoningTrace)
    assert_type(memory.get_trace(trace.id), ReasoningTrace | None)
    assert_type(memory.list_traces("s", success=True), list[ReasoningTrace])
    assert_type(memory.list_traces_page(limit=2, cursor=None), TracePage)
    assert_type(memory.tool_stats("search"), list[ToolStats])
    assert_type(memory.similar_traces("flight", threshold=0.5), list[ReasoningTrace])
    assert_type(memory.search_steps("api", limit=3), list[ReasoningStep])
    # erasure and retention
    assert_type(memory.forget_user("u", batch_size=10), ErasureReport)
    assert_type(memory.expire_conversations(timedelta(days=30), dry_run=True), ExpiryReport)
    assert_type(memory.forget_user("u", dry_run=True), ErasureReport)
    assert_type(memory.expire_conversations(timedelta(days=1), by="last_message"), ExpiryReport)
    assert_type(memory.stats(user_identifier="u"), StoreStats)


def check_properties(memory: SyncMemoryBackend) -> None:
    assert_type(memory.backend, MemoryBackend)
    assert_type(memory.capabilities, Capabilities)
    assert_type(memory.name, str)
    assert_type(memory.strict, bool)
    assert_type(memory.multi_tenant, bool)
    assert_type(memory.describe(), str)


def check_mistakes_are_errors(memory: SyncMemoryBackend) -> None:
    memory.no_such_method()  # type: ignore[attr-defined]
    memory.add_message("s", "user", "x", no_such_option=True)  # type: ignore[call-arg]
    memory.get_conversation("s", limit="ten")  # type: ignore[arg-type]
    memory.list_conversations_page(cursor=3)  # type: ignore[arg-type]
    memory.search_messages()  # type: ignore[call-arg]
