"""Which GenAI memory operation each public method is, and the attributes of its span.

No OpenTelemetry import here: plain names and values, tested without the SDK.
"""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Callable, Mapping
from typing import Any

from ..models import Conversation, ConversationPage, Entity, Message

OPERATIONS: Mapping[str, str] = {
    "add_message": "create_memory",
    "add_messages_batch": "create_memory",
    "create_conversation": "create_memory_store",
    "get_conversation": "search_memory",
    "list_conversations": "list_memory_stores",
    "list_conversations_page": "list_memory_stores",
    "list_sessions": "list_memory_stores",
    "search_messages": "search_memory",
    "get_context": "search_memory",
    "get_conversation_summary": "search_memory",
    "get_observations": "search_memory",
    "get_reflections": "search_memory",
    "get_extraction_status": "search_memory",
    "wait_for_extraction": "search_memory",
    "delete_message": "delete_memory",
    "clear_session": "delete_memory",
    "add_entity": "upsert_memory",
    "find_entities": "search_memory",
    "delete_entity": "delete_memory",
    "search_entities": "search_memory",
    "get_entity": "search_memory",
    "get_entity_by_name": "search_memory",
    "update_entity": "update_memory",
    "merge_entities": "update_memory",
    "add_preference": "create_memory",
    "search_preferences": "search_memory",
    "list_preferences": "search_memory",
    "supersede_preference": "update_memory",
    "delete_preference": "delete_memory",
    "add_fact": "create_memory",
    "search_facts": "search_memory",
    "facts_about": "search_memory",
    "delete_fact": "delete_memory",
    "add_relationship": "upsert_memory",
    "list_relationships": "search_memory",
    "related_entities": "search_memory",
    "delete_relationship": "delete_memory",
    "start_trace": "create_memory",
    "add_step": "create_memory",
    "record_tool_call": "create_memory",
    "complete_trace": "update_memory",
    "link_trace": "update_memory",
    "get_trace": "search_memory",
    "list_traces": "search_memory",
    "list_traces_page": "search_memory",
    "tool_stats": "search_memory",
    "similar_traces": "search_memory",
    "search_steps": "search_memory",
    "forget_user": "delete_memory",
    "expire_conversations": "delete_memory_store",
    "stats": "list_memory_stores",
}
"""Public method → ``gen_ai.operation.name`` (``list_memory_stores`` is memory-core's own
value: the conventions name no operation for listing stores)."""

# Operations whose argument names a single record.
_RECORD_ARGUMENT = {
    "delete_message": "message_id",
    "delete_entity": "entity_id",
    "get_entity": "entity_id",
    "update_entity": "entity_id",
    "merge_entities": "source_id",
    "delete_preference": "preference_id",
    "supersede_preference": "old_id",
    "delete_fact": "fact_id",
    "delete_relationship": "relationship_id",
    "list_relationships": "entity_id",
    "related_entities": "entity_id",
    "add_step": "trace_id",
    "record_tool_call": "step_id",
    "complete_trace": "trace_id",
    "link_trace": "trace_id",
    "get_trace": "trace_id",
}
_QUERY_ARGUMENT = {
    "search_messages": "query",
    "get_context": "query",
    "find_entities": "identifier",
    "search_entities": "query",
    "get_entity_by_name": "name",
    "search_preferences": "query",
    "search_facts": "query",
    "similar_traces": "task",
    "search_steps": "query",
}
_BATCH = ("add_messages_batch",)

STORE_ID = "gen_ai.memory.store.id"
RECORD_ID = "gen_ai.memory.record.id"
RECORD_COUNT = "gen_ai.memory.record.count"
QUERY_TEXT = "gen_ai.memory.query.text"
RECORDS = "gen_ai.memory.records"


@functools.cache
def _positional(method: Callable[..., Any]) -> tuple[str, ...]:
    """The names of ``method``'s positional parameters after ``self``."""
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    found = [p.name for p in inspect.signature(method).parameters.values() if p.kind in kinds]
    return tuple(found[1:])


def bind(
    method: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> dict[str, Any]:
    """The call's arguments by name (those given; defaults are not filled in)."""
    return {**dict(zip(_positional(method), args, strict=False)), **kwargs}


def request_attributes(name: str, arguments: Mapping[str, Any], capture: bool) -> dict[str, Any]:
    """Attributes known before the call runs."""
    found: dict[str, Any] = {}
    store = arguments.get("session_id") or arguments.get("conversation_id")
    if isinstance(store, str | int) or hasattr(store, "hex"):
        found[STORE_ID] = str(store)
    record = arguments.get(_RECORD_ARGUMENT.get(name, ""))
    if record is not None:
        found[RECORD_ID] = str(record)
    messages = arguments.get("messages")
    if name in _BATCH and isinstance(messages, list):
        found[RECORD_COUNT] = len(messages)
    query = arguments.get(_QUERY_ARGUMENT.get(name, ""))
    if capture and isinstance(query, str):
        found[QUERY_TEXT] = query
    return found


def batch_size(name: str, arguments: Mapping[str, Any]) -> int | None:
    """``db.operation.batch.size`` for a batch of two or more messages, else None."""
    messages = arguments.get("messages")
    if name in _BATCH and isinstance(messages, list) and len(messages) > 1:
        return len(messages)
    return None


def _record(item: Message | Entity) -> dict[str, Any]:
    if isinstance(item, Entity):
        return {"id": item.id, "content": item.name}
    found: dict[str, Any] = {"id": str(item.id), "content": item.content}
    if item.score is not None:
        found["score"] = item.score
    return found


def result_attributes(name: str, result: Any, capture: bool) -> dict[str, Any]:
    """Attributes of what the call returned: the record id where one record was written
    or read, the record count, and (with capture on) the messages or entities."""
    found: dict[str, Any] = {}
    records: list[Message | Entity] | None = None
    if isinstance(result, Message | Entity):
        found[RECORD_ID] = str(result.id)
        records = [result]
    elif isinstance(result, Conversation):
        if name == "create_conversation":
            found[STORE_ID] = str(result.id)
        records = list(result.messages)
    elif isinstance(result, ConversationPage):
        found[RECORD_COUNT] = len(result.conversations)
    elif isinstance(result, list) and all(isinstance(x, Message | Entity) for x in result):
        records = result
    elif isinstance(result, list):
        found[RECORD_COUNT] = len(result)
    elif isinstance(getattr(result, "id", None), str):
        # One long-term or reasoning record (a preference, a trace, a step, a tool call):
        # its id, never its text.
        found[RECORD_ID] = result.id
    if records is not None and name != "create_conversation":
        found[RECORD_COUNT] = len(records)
        if capture:
            found[RECORDS] = json.dumps([_record(r) for r in records], ensure_ascii=False)
    return found
