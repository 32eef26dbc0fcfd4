"""The one table mapping each capability flag to what the suite checks.

SQLAlchemy-style requirements: a scenario says ``requires=("delete_message",)``. When the
flag is True the scenario body asserts the behaviour. When it is False the body is not
run; instead :meth:`Requirement.verify_refusal` checks the backend says no the documented
way (usually a complete :class:`~memory_core.NotSupportedError`; a dropped argument warns
once with :class:`~memory_core.CapabilityWarning` and raises with ``strict=True``), and
the scenario is reported as not applicable. A flag that is False but silently works,
ignores input or drops an argument without saying so fails here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from uuid import uuid4

import anyio
import pytest

from memory_core import (
    EntityRef,
    HashingEmbedder,
    InvalidRequestError,
    MemoryBackend,
    NotFoundError,
    NotSupportedError,
    SessionRequiredError,
)

from .checks import capability_warnings, refused, word
from .harness import Harness

Probe = Callable[[Harness], Awaitable[None]]


@dataclass(frozen=True)
class Requirement:
    """What a flag promises when True and how the backend must refuse when False."""

    flag: str
    when_true: str
    when_false: str
    probe: Probe | None = None

    async def verify_refusal(self, harness: Harness) -> None:
        """Assert the backend refuses the way :attr:`when_false` says (flag is False)."""
        if self.probe is not None:
            await self.probe(harness)


async def _assert_dropped(
    harness: Harness, method: str, write: Callable[..., Awaitable[object]]
) -> None:
    """``write(backend, handle)`` passes an argument the backend cannot honour: it warns
    once (not on the second call) and, with ``strict=True``, raises and writes nothing."""
    lenient = await harness.open()
    handle = await harness.new_session(backend=lenient)
    with capability_warnings() as first:
        await write(lenient, handle)
    assert len(first) == 1, f"{method}: expected one CapabilityWarning, got {len(first)}"
    with capability_warnings() as second:
        await write(lenient, handle)
    assert not second, f"{method}: the CapabilityWarning was repeated (it must warn once)"
    strict = await harness.open(strict=True)
    handle = await harness.new_session(backend=strict)
    with refused(strict):
        await write(strict, handle)
    assert await harness.contents(handle, backend=strict) == [], "strict refusal wrote data"


async def _probe_delete(h: Harness) -> None:
    with refused(h.backend, "delete_message"):
        await h.backend.delete_message(uuid4())


async def _probe_list_sessions(h: Harness) -> None:
    with refused(h.backend, "list_sessions"):
        await h.backend.list_sessions()


async def _probe_summary(h: Harness) -> None:
    handle = await h.new_session()
    with refused(h.backend, "get_conversation_summary"):
        await h.backend.get_conversation_summary(handle)


async def _probe_metadata(h: Harness) -> None:
    async def write(backend: MemoryBackend, handle: str) -> None:
        stored = await backend.add_message(handle, "user", "meta", metadata={"k": 1})
        assert stored.metadata == {}, f"metadata was kept although dropped: {stored.metadata}"

    await _assert_dropped(h, "add_message(metadata=...)", write)


async def _probe_mentions(h: Harness) -> None:
    ref = EntityRef(name=word(), type="PERSON")

    async def write(backend: MemoryBackend, handle: str) -> None:
        stored = await backend.add_message(
            handle, "user", "hi", extraction_mode="explicit", explicit_mentions=[ref]
        )
        assert stored.mentions == [], f"mentions were kept although dropped: {stored.mentions}"

    await _assert_dropped(h, "add_message(explicit_mentions=...)", write)
    with refused(h.backend, "open"):
        h.open_unconnected(extractor=lambda text: [])


async def _probe_idempotency(h: Harness) -> None:
    key = h.unique("key")

    async def write(backend: MemoryBackend, handle: str) -> None:
        await backend.add_message(handle, "user", "same", idempotency_key=key)

    await _assert_dropped(h, "add_message(idempotency_key=...)", write)
    # dropped means really dropped: a replay is stored again, not silently de-duplicated
    handle = await h.new_session()
    with capability_warnings():
        await write(h.backend, handle)
        await write(h.backend, handle)
    assert await h.contents(handle) == ["same", "same"], "the dropped key still de-duplicated"


async def _probe_titles(h: Harness) -> None:
    async def write(backend: MemoryBackend, handle: str) -> None:
        made = await backend.create_conversation(session_id=handle, title="dropped title")
        if backend.capabilities.client_chosen_ids:
            assert made.title is None, f"the title was kept although dropped: {made.title!r}"
        else:
            h.track(str(made.id), backend=backend)

    await _assert_dropped(h, "create_conversation(title=...)", write)


async def _probe_user_scope(h: Harness) -> None:
    async def write(backend: MemoryBackend, handle: str) -> None:
        await backend.add_message(handle, "user", "user dropped", user_identifier=h.unique("u"))

    await _assert_dropped(h, "add_message(user_identifier=...)", write)


async def _probe_client_ids(h: Harness) -> None:
    name = h.unique()
    with pytest.raises((NotFoundError, InvalidRequestError)):
        await h.backend.add_message(name, "user", "to a name the store never issued")
    handle = await h.new_session(name=name)
    await h.backend.add_message(handle, "user", "to the id the store issued")
    assert await h.contents(handle) == ["to the id the store issued"]


async def _probe_auto_create(h: Harness) -> None:
    handle = h.missing_session()
    with pytest.raises(NotFoundError):
        await h.backend.get_conversation(handle)
    with pytest.raises(NotFoundError):
        await h.backend.add_message(handle, "user", "to a conversation that does not exist")


async def _probe_full_history(h: Harness) -> None:
    cap = h.caps.max_messages_per_read
    assert cap is not None, "full_history is False but max_messages_per_read is None"
    handle = await h.new_session()
    with capability_warnings() as found:
        await h.backend.get_conversation(handle, limit=cap + 1)
    assert found, f"limit={cap + 1} above the cap was not clamped with a CapabilityWarning"


async def _probe_since_on_page(h: Harness) -> None:
    handle = await h.new_session()
    for n in range(2):
        await h.backend.add_message(handle, "user", f"early {n}")
    await anyio.sleep(0.05)
    for n in range(2):
        await h.backend.add_message(handle, "user", f"late {n}")
    cutoff = (await h.messages(handle))[1].created_at
    read = await h.backend.get_conversation(handle, since=cutoff)
    assert [m.content for m in read.messages] == ["late 0", "late 1"], (
        "since did not filter the fetched page"
    )


async def _probe_caller_timestamps(h: Harness) -> None:
    stamp = datetime(2001, 2, 3, 4, 5, 6, tzinfo=UTC)

    async def write(backend: MemoryBackend, handle: str) -> None:
        stored = await backend.add_messages_batch(
            handle, [{"role": "user", "content": "old", "timestamp": stamp}]
        )
        assert stored[0].created_at - stamp > timedelta(days=1), "the timestamp was kept"

    await _assert_dropped(h, "add_messages_batch(timestamp=...)", write)


async def _probe_search_global(h: Harness) -> None:
    with pytest.raises(SessionRequiredError) as info:
        await h.backend.search_messages(word())
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, NotSupportedError)
    with refused(h.backend, "search_messages"):
        await h.backend.search_messages(word())
    handle = await h.new_session()
    with refused(h.backend, "get_context"):
        await h.backend.get_context(word(), session_id=handle, across_sessions=True)


async def _probe_neighbours(h: Harness) -> None:
    handle = await h.new_session()
    await h.backend.add_message(handle, "user", f"a {word()} line")
    with refused(h.backend, "get_context"):
        await h.backend.get_context(word(), session_id=handle, neighbours=1)


async def _probe_threshold(h: Harness) -> None:
    async def write(backend: MemoryBackend, handle: str) -> None:
        await backend.search_messages(word(), session_id=handle, threshold=0.5)

    await _assert_dropped(h, "search_messages(threshold=...)", write)


async def _probe_filters(h: Harness) -> None:
    handle = await h.new_session()
    strict = await h.open(strict=True)
    strict_handle = await h.new_session(backend=strict)
    for backend, target in ((h.backend, handle), (strict, strict_handle)):
        with refused(backend, "search_messages"):
            await backend.search_messages(word(), session_id=target, metadata_filters={"k": 1})


async def _probe_vector(h: Harness) -> None:
    with refused(h.backend, "open"):
        h.open_unconnected(embedder=HashingEmbedder())


async def _probe_observations(h: Harness) -> None:
    handle = await h.new_session()
    with refused(h.backend, "get_observations"):
        await h.backend.get_observations(handle)


async def _probe_reflections(h: Harness) -> None:
    handle = await h.new_session()
    with refused(h.backend, "get_reflections"):
        await h.backend.get_reflections(handle)


async def _probe_extraction(h: Harness) -> None:
    handle = await h.new_session()
    with refused(h.backend, "get_extraction_status"):
        await h.backend.get_extraction_status(handle)
    assert await h.backend.wait_for_extraction(handle, timeout=1) is True


async def _probe_entities(h: Harness) -> None:
    with refused(h.backend, "add_entity"):
        await h.backend.add_entity(word(), "PERSON")
    with refused(h.backend, "find_entities"):
        await h.backend.find_entities(word())


async def _probe_delete_entity(h: Harness) -> None:
    with refused(h.backend, "delete_entity"):
        await h.backend.delete_entity(word())


async def _probe_entity_search(h: Harness) -> None:
    with refused(h.backend, "search_entities"):
        await h.backend.search_entities(word())


async def _probe_entity_updates(h: Harness) -> None:
    with refused(h.backend, "get_entity"):
        await h.backend.get_entity(word())
    with refused(h.backend, "get_entity_by_name"):
        await h.backend.get_entity_by_name(word())
    with refused(h.backend, "update_entity"):
        await h.backend.update_entity(word(), description=word())


async def _probe_entity_merge(h: Harness) -> None:
    with refused(h.backend, "merge_entities"):
        await h.backend.merge_entities(word(), word())


async def _probe_preferences(h: Harness) -> None:
    user = h.new_user()
    with refused(h.backend, "add_preference"):
        await h.backend.add_preference("food", word(), user_identifier=user)
    with refused(h.backend, "search_preferences"):
        await h.backend.search_preferences(word(), user_identifier=user)
    with refused(h.backend, "list_preferences"):
        await h.backend.list_preferences(user_identifier=user)
    with refused(h.backend, "supersede_preference"):
        await h.backend.supersede_preference(word(), word(), user_identifier=user)
    with refused(h.backend, "delete_preference"):
        await h.backend.delete_preference(word(), user_identifier=user)


async def _probe_facts(h: Harness) -> None:
    user = h.new_user()
    with refused(h.backend, "add_fact"):
        await h.backend.add_fact(word(), "KNOWS", word(), user_identifier=user)
    with refused(h.backend, "search_facts"):
        await h.backend.search_facts(word(), user_identifier=user)
    with refused(h.backend, "facts_about"):
        await h.backend.facts_about(word(), user_identifier=user)
    with refused(h.backend, "delete_fact"):
        await h.backend.delete_fact(word(), user_identifier=user)


async def _probe_relationships(h: Harness) -> None:
    with refused(h.backend, "add_relationship"):
        await h.backend.add_relationship(word(), word(), "KNOWS")
    with refused(h.backend, "delete_relationship"):
        await h.backend.delete_relationship(word())


async def _probe_entity_graph(h: Harness) -> None:
    with refused(h.backend, "list_relationships"):
        await h.backend.list_relationships(word())
    with refused(h.backend, "related_entities"):
        await h.backend.related_entities(word())


async def _probe_traces(h: Harness) -> None:
    user = h.new_user()
    with refused(h.backend, "start_trace"):
        await h.backend.start_trace(word(), word(), user_identifier=user)
    with refused(h.backend, "add_step"):
        await h.backend.add_step(word(), thought=word(), user_identifier=user)
    with refused(h.backend, "record_tool_call"):
        await h.backend.record_tool_call(word(), "search", user_identifier=user)
    with refused(h.backend, "complete_trace"):
        await h.backend.complete_trace(word(), success=True, user_identifier=user)
    with refused(h.backend, "get_trace"):
        await h.backend.get_trace(word(), user_identifier=user)
    with refused(h.backend, "list_traces"):
        await h.backend.list_traces(user_identifier=user)
    with refused(h.backend, "list_traces_page"):
        await h.backend.list_traces_page(user_identifier=user)


async def _probe_tool_stats(h: Harness) -> None:
    with refused(h.backend, "tool_stats"):
        await h.backend.tool_stats(user_identifier=h.new_user())


async def _probe_similar_traces(h: Harness) -> None:
    user = h.new_user()
    with refused(h.backend, "similar_traces"):
        await h.backend.similar_traces(word(), user_identifier=user)
    with refused(h.backend, "search_steps"):
        await h.backend.search_steps(word(), user_identifier=user)


async def _probe_trace_links(h: Harness) -> None:
    with refused(h.backend, "link_trace"):
        await h.backend.link_trace(word(), entity_ids=[word()], user_identifier=h.new_user())


async def _probe_erasure(h: Harness) -> None:
    with refused(h.backend, "forget_user"):
        await h.backend.forget_user(h.new_user())


async def _probe_stats(h: Harness) -> None:
    with refused(h.backend, "stats"):
        await h.backend.stats()
    if h.caps.user_erasure:
        with refused(h.backend, "forget_user"):
            await h.backend.forget_user(h.new_user(), dry_run=True)


async def _probe_multi_tenant(h: Harness) -> None:
    with refused(h.backend, "open"):
        h.open_unconnected(multi_tenant=True)


_NSE = "the call raises a complete NotSupportedError (verified)"
_DROP = "the argument is dropped with one CapabilityWarning, strict=True raises (verified)"

REQUIREMENTS: dict[str, Requirement] = {
    r.flag: r
    for r in (
        Requirement(
            "delete_message", "delete_message removes one message, order kept", _NSE, _probe_delete
        ),
        Requirement(
            "list_sessions",
            "list_sessions counts and previews sessions",
            _NSE,
            _probe_list_sessions,
        ),
        Requirement(
            "conversation_summary", "get_conversation_summary summarises", _NSE, _probe_summary
        ),
        Requirement(
            "conversation_titles", "a conversation title round-trips", _DROP, _probe_titles
        ),
        Requirement("message_metadata", "metadata round-trips exactly", _DROP, _probe_metadata),
        Requirement(
            "explicit_mentions",
            "explicit_mentions are stored and returned",
            _DROP + "; an extractor is refused at open",
            _probe_mentions,
        ),
        Requirement("idempotency_keys", "a replayed key writes nothing", _DROP, _probe_idempotency),
        Requirement(
            "client_chosen_ids",
            "any unique string names a session",
            "a name the store never issued is rejected (verified)",
            _probe_client_ids,
        ),
        Requirement(
            "auto_create_conversation",
            "writing to a new session creates it",
            "an unknown conversation raises NotFoundError (verified)",
            _probe_auto_create,
        ),
        Requirement(
            "full_history",
            "every message can be read back",
            "reads are capped by max_messages_per_read with a CapabilityWarning (verified)",
            _probe_full_history,
        ),
        Requirement(
            "server_side_since",
            "since filters in the store",
            "since filters the fetched page (verified)",
            _probe_since_on_page,
        ),
        Requirement(
            "caller_timestamps", "batch timestamps are kept", _DROP, _probe_caller_timestamps
        ),
        Requirement(
            "search_global",
            "search without a session searches every session",
            "search without a session raises SessionRequiredError, get_context(across_sessions="
            "True) NotSupportedError (verified)",
            _probe_search_global,
        ),
        Requirement("search_threshold", "threshold drops weaker hits", _DROP, _probe_threshold),
        Requirement(
            "message_neighbours",
            "get_context(neighbours=N) adds the messages around each hit",
            _NSE,
            _probe_neighbours,
        ),
        Requirement(
            "search_metadata_filters",
            "metadata_filters apply exactly",
            "metadata_filters always raise NotSupportedError (verified)",
            _probe_filters,
        ),
        Requirement(
            "vector_search",
            "an embedder enables semantic search",
            "an embedder is refused at open (verified)",
            _probe_vector,
        ),
        Requirement("observations", "get_observations returns dicts", _NSE, _probe_observations),
        Requirement("reflections", "get_reflections returns dicts", _NSE, _probe_reflections),
        Requirement(
            "extraction_status",
            "get_extraction_status reports progress",
            _NSE + "; wait_for_extraction returns True",
            _probe_extraction,
        ),
        Requirement("entities", "add_entity / find_entities work", _NSE, _probe_entities),
        Requirement("delete_entity", "delete_entity removes an entity", _NSE, _probe_delete_entity),
        Requirement("entity_search", "search_entities finds by words", _NSE, _probe_entity_search),
        Requirement(
            "entity_updates",
            "entities read by id, name or alias and updated",
            _NSE,
            _probe_entity_updates,
        ),
        Requirement("entity_merge", "merge moves everything once", _NSE, _probe_entity_merge),
        Requirement("preferences", "a user's preferences round-trip", _NSE, _probe_preferences),
        Requirement("facts", "facts round-trip with their validity", _NSE, _probe_facts),
        Requirement("relationships", "relationships add and delete", _NSE, _probe_relationships),
        Requirement("entity_graph", "relationships list and traverse", _NSE, _probe_entity_graph),
        Requirement(
            "traces",
            "traces, numbered steps and tool calls round-trip; completion happens once",
            _NSE,
            _probe_traces,
        ),
        Requirement(
            "tool_stats", "tool statistics are exact after every status", _NSE, _probe_tool_stats
        ),
        Requirement(
            "similar_traces",
            "similar traces and step search score past work",
            _NSE,
            _probe_similar_traces,
        ),
        Requirement(
            "trace_links", "a trace links messages and entities once", _NSE, _probe_trace_links
        ),
        Requirement(
            "multi_tenant",
            "multi_tenant=True isolates users",
            "multi_tenant=True is refused at open (verified)",
            _probe_multi_tenant,
        ),
        Requirement(
            "user_scoped_calls",
            "every call takes user_identifier",
            "user_identifier is dropped outside create/list with one CapabilityWarning, "
            "strict=True raises (verified)",
            _probe_user_scope,
        ),
        Requirement(
            "user_erasure",
            "forget_user erases a user and nothing of theirs is readable",
            _NSE,
            _probe_erasure,
        ),
        Requirement(
            "store_stats",
            "stats counts each user's conversations, messages and entities exactly, and "
            "forget_user(dry_run=True) reports them and deletes nothing",
            _NSE + "; so does forget_user(dry_run=True)",
            _probe_stats,
        ),
        Requirement(
            "trio",
            "the backend runs under trio",
            "the backend is asyncio-only (nothing to verify: runtime.trio is n/a)",
        ),
    )
}
