"""Capability flags: what a backend can do, declared once per backend class.

A flag that is True is a promise the conformance suite checks; a flag that is False means
the matching call raises :class:`~memory_core.errors.NotSupportedError`. Limits are numbers
(``None`` means no cap).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any


@dataclass(frozen=True)
class Flag:
    """One capability flag: what it promises and the optional
    :class:`~memory_core.interface.Store` hooks a store that claims it must implement
    (checked when the store class is defined)."""

    doc: str
    hooks: tuple[str, ...] = ()


def flag(doc: str, *, hooks: tuple[str, ...] = ()) -> bool:
    """A flag of :class:`Capabilities`, declared in one line: False unless a store sets it,
    its one-line meaning, and the hooks it promises."""
    return field(default=False, metadata={"flag": Flag(doc, hooks)})


def limit(doc: str, default: int | None) -> Any:
    """A numeric limit of :class:`Capabilities` (``None``: no cap) with its meaning."""
    return field(default=default, metadata={"limit": doc})


@dataclass(frozen=True)
class Capabilities:
    """Frozen set of named boolean flags plus numeric limits."""

    delete_message: bool = flag(
        "delete one message and repair the order of the rest", hooks=("delete_message",)
    )
    list_sessions: bool = flag("list sessions with counts and previews", hooks=("list_sessions",))
    conversation_summary: bool = flag("summarise a conversation")
    conversation_titles: bool = flag("create_conversation stores a title")
    message_metadata: bool = flag("store and return per-message metadata exactly")
    explicit_mentions: bool = flag("link messages to entities (extraction_mode='explicit')")
    idempotency_keys: bool = flag("add_message(idempotency_key=...) replays write nothing")
    client_chosen_ids: bool = flag("the caller names the session; the store does not issue ids")
    auto_create_conversation: bool = flag("writing to an unknown session creates its conversation")
    full_history: bool = flag("every message of a conversation can be read back")
    server_side_since: bool = flag("get_conversation(since=...) filters in the store")
    caller_timestamps: bool = flag("batch writes keep caller-supplied timestamps")
    search_global: bool = flag("search_messages without a session searches every session")
    search_threshold: bool = flag("search_messages honours threshold")
    search_metadata_filters: bool = flag("search_messages honours metadata_filters exactly")
    vector_search: bool = flag("semantic search when an embedder is configured")
    message_neighbours: bool = flag(
        "get_context(neighbours=N) adds the N messages before and after each hit",
        hooks=("message_neighbours",),
    )
    observations: bool = flag(
        "server-side observations for a conversation", hooks=("get_observations",)
    )
    reflections: bool = flag(
        "server-side reflections for a conversation", hooks=("get_reflections",)
    )
    extraction_status: bool = flag(
        "per-message entity-extraction status", hooks=("get_extraction_status",)
    )
    entities: bool = flag("add_entity / find_entities", hooks=("add_entity", "find_entities"))
    delete_entity: bool = flag("delete an entity and its mentions", hooks=("delete_entity",))
    entity_search: bool = flag(
        "search_entities scores entities by words of their name and description",
        hooks=("search_entities",),
    )
    entity_updates: bool = flag(
        "get an entity by id or by name or alias; update its name, description, aliases "
        "and attributes",
        hooks=("get_entity", "get_entity_by_name", "update_entity"),
    )
    entity_merge: bool = flag(
        "merge a duplicate entity into another: everything moves, the source goes",
        hooks=("merge_entities",),
    )
    preferences: bool = flag(
        "store, search, list, supersede and delete a user's preferences",
        hooks=(
            "add_preference",
            "search_preferences",
            "list_preferences",
            "supersede_preference",
            "delete_preference",
        ),
    )
    facts: bool = flag(
        "store, search and delete subject-predicate-object facts with validity",
        hooks=("add_fact", "search_facts", "facts_about", "delete_fact"),
    )
    relationships: bool = flag(
        "add and delete typed relationships between entities",
        hooks=("add_relationship", "delete_relationship"),
    )
    traces: bool = flag(
        "reasoning traces: start, add steps, record tool calls, complete, get and list",
        hooks=(
            "start_trace",
            "add_step",
            "record_tool_call",
            "complete_trace",
            "get_trace",
            "list_traces",
        ),
    )
    tool_stats: bool = flag(
        "tool_stats: calls, successes, failures, rate, mean duration per tool",
        hooks=("tool_stats",),
    )
    similar_traces: bool = flag(
        "similar_traces and search_steps score past tasks and steps",
        hooks=("similar_traces", "search_steps"),
    )
    trace_links: bool = flag(
        "link a trace to the messages and entities it touched", hooks=("link_trace",)
    )
    entity_graph: bool = flag(
        "list an entity's relationships and traverse them to depth 3",
        hooks=("list_relationships", "related_entities"),
    )
    multi_tenant: bool = flag("multi_tenant=True scopes every call to user_identifier")
    user_scoped_calls: bool = flag(
        "calls naming a session take user_identifier (implied by multi_tenant)"
    )
    trio: bool = flag("runs under trio as well as asyncio")
    user_erasure: bool = flag(
        "forget_user erases what the store holds for a user (not_reached: the rest)",
        hooks=("forget_user",),
    )
    store_stats: bool = flag(
        "stats counts conversations, messages and entities per user in the store",
        hooks=("stats",),
    )
    max_messages_per_read: int | None = limit(
        "most messages one get_conversation returns (None: no cap)", None
    )
    default_messages_per_read: int = limit(
        "messages get_conversation returns when limit=None", 1000
    )
    max_page_size: int | None = limit(
        "most conversations one list request returns (None: no cap)", None
    )
    max_bulk_messages: int | None = limit(
        "most messages one bulk request carries (None: no cap)", None
    )
    max_search_hits: int | None = limit(
        "most hits one search_messages or find_entities returns (None: no cap)", None
    )
    max_indexed_bytes: int | None = limit(
        "largest session id, user or entity name the store indexes, UTF-8 bytes (None: no cap)",
        None,
    )

    def __post_init__(self) -> None:
        # A backend that can scope every call to a tenant takes user_identifier everywhere.
        if self.multi_tenant:
            object.__setattr__(self, "user_scoped_calls", True)

    def supports(self, name: str) -> bool:
        """True when the flag ``name`` is set. Unknown names raise ``KeyError``."""
        if name not in FLAG_DOCS:
            raise KeyError(f"unknown capability flag {name!r}")
        return bool(getattr(self, name))

    @classmethod
    def flag_names(cls) -> list[str]:
        """Every boolean flag, in declaration order."""
        return [f.name for f in fields(cls) if f.name in FLAG_DOCS]

    @classmethod
    def limit_names(cls) -> list[str]:
        """Every numeric limit, in declaration order."""
        return [f.name for f in fields(cls) if f.name in LIMIT_DOCS]

    def as_dict(self) -> dict[str, Any]:
        """Flags and limits as a plain dict: ``{"flags": {...}, "limits": {...}}``."""
        data = asdict(self)
        return {
            "flags": {n: data[n] for n in self.flag_names()},
            "limits": {n: data[n] for n in self.limit_names()},
        }

    def to_json(self, **extra: Any) -> str:
        """The dict of :meth:`as_dict` (plus ``extra`` keys) as indented JSON."""
        return json.dumps({**extra, **self.as_dict()}, indent=2)

    def to_table(self) -> str:
        """A plain-text table of every flag and limit with a one-line meaning."""
        rows = [(n, "yes" if getattr(self, n) else "no", FLAG_DOCS[n]) for n in self.flag_names()]
        rows += [
            (n, "none" if getattr(self, n) is None else str(getattr(self, n)), LIMIT_DOCS[n])
            for n in self.limit_names()
        ]
        w0 = max(len(r[0]) for r in rows)
        w1 = max(len(r[1]) for r in rows)
        lines = [f"{'capability':<{w0}}  {'value':<{w1}}  meaning", "-" * (w0 + w1 + 40)]
        lines += [f"{a:<{w0}}  {b:<{w1}}  {c}" for a, b, c in rows]
        return "\n".join(lines)


FLAGS: dict[str, Flag] = {
    f.name: f.metadata["flag"] for f in fields(Capabilities) if "flag" in f.metadata
}
FLAG_DOCS: dict[str, str] = {name: each.doc for name, each in FLAGS.items()}
HOOKS_FOR_FLAG: dict[str, tuple[str, ...]] = {
    name: each.hooks for name, each in FLAGS.items() if each.hooks
}
LIMIT_DOCS: dict[str, str] = {
    f.name: f.metadata["limit"] for f in fields(Capabilities) if "limit" in f.metadata
}
assert set(FLAG_DOCS) | set(LIMIT_DOCS) == {f.name for f in fields(Capabilities)}
