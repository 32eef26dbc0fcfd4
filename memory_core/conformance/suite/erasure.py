"""forget_user: nothing of the user is readable afterwards, everyone else is unchanged."""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from typing import Any

import anyio

from memory_core import (
    EntityRef,
    InvalidRequestError,
    MemoryBackend,
    MemoryCoreError,
    NotFoundError,
)
from memory_core.transfer import export_memory
from memory_core.turns import TurnMemory

from ..checks import word
from ..embedder import ConceptEmbedder
from ..harness import Harness
from ..scenarios import scenario
from .base import SuiteBase

MEANING = "we need a reservation for supper tonight"
QUERY = "dinner booking"  # no word in common with MEANING (see search.vector)
RETURNS_WITHIN = 120.0
"""Seconds a forget_user racing with the user's writers gets: a check that it returns at
all (it did not while they wrote), far above what it takes."""


@dataclass
class _Writer:
    """A task that writes for one user into a session of its own, back to back, until
    stopped; a session the erasure deleted under it is made again."""

    harness: Harness
    user: str
    label: str
    before: list[str] = field(default_factory=list)
    """What it wrote before ``started`` was set."""
    started: bool = False
    stop: anyio.Event = field(default_factory=anyio.Event)

    async def run(self) -> None:
        scope = _scope(self.harness, self.user)
        handle = await self.harness.new_session(user=self.user, create=True)
        count = 0
        while not self.stop.is_set():
            text = f"{self.label}-{count}"
            count += 1
            try:
                await self.harness.backend.add_message(handle, "user", text, user_identifier=scope)
            except NotFoundError:
                handle = await self.harness.new_session(user=self.user, create=True)
                continue
            except MemoryCoreError:
                continue  # a write that collided with the delete (see docs/erasure.md)
            if not self.started:
                self.before.append(text)


@dataclass
class _Written:
    """What one user wrote: handles, message ids, and the words only they used."""

    user: str
    handles: list[str] = field(default_factory=list)
    ids: set[str] = field(default_factory=set)
    words: list[str] = field(default_factory=list)
    entity: str = ""


def _scope(harness: Harness, user: str) -> str | None:
    """The user to pass on calls that name a session (see ``Harness``'s ``_Made.scope``)."""
    return user if harness.caps.user_scoped_calls else None


def _entity_scope(backend: MemoryBackend, user: str) -> str | None:
    """The user to pass to entity calls: only a multi-tenant store keeps entities apart."""
    return user if backend.multi_tenant else None


async def _write(
    harness: Harness, backend: MemoryBackend, user: str, shared: str, semantic: bool
) -> _Written:
    """As ``user``: messages with metadata, mentions (one entity of their own and one
    shared with the other user), an idempotency key, a turn, and a message meant for
    vector search when ``semantic``."""
    caps = harness.caps
    out = _Written(user=user, entity=f"Ent{word()}")
    scope = _scope(harness, user)
    handle = await harness.new_session(backend=backend, user=user, create=True)
    out.handles.append(handle)
    term = word()
    out.words.append(term)
    extras: dict[str, Any] = {}
    if caps.message_metadata:
        extras["metadata"] = {"note": term, "n": [1, True]}
    if caps.idempotency_keys:
        extras["idempotency_key"] = f"key-{term}"
    if caps.explicit_mentions:
        harness.allow_entities()
        extras["extraction_mode"] = "explicit"
        extras["explicit_mentions"] = [
            EntityRef(name=out.entity, type="PERSON"),
            EntityRef(name=shared, type="CONCEPT"),
        ]
    stored = await backend.add_message(
        handle, "user", f"first {term}", user_identifier=scope, **extras
    )
    out.ids.add(str(stored.id))
    second = word()
    out.words.append(second)
    batch = await backend.bulk_add_messages(
        handle,
        [{"role": "assistant", "content": f"reply {second}"}],
        user_identifier=scope,
    )
    out.ids |= {str(m.id) for m in batch}
    if semantic:
        stored = await backend.add_message(
            handle, "user", f"{MEANING} {term}", user_identifier=scope
        )
        out.ids.add(str(stored.id))
    turns = await harness.new_session(backend=backend, user=user, create=True)
    out.handles.append(turns)
    turn_word = word()
    out.words.append(turn_word)
    memory = TurnMemory(backend, turns, "conformance", user_identifier=user)
    opened = await memory.open_turn("t1", f"asking {turn_word}")
    reply = await memory.close_turn("t1", f"answer {turn_word}")
    out.ids |= {str(opened.user_message.id), str(reply.id)}
    return out


async def _export(backend: MemoryBackend, user: str) -> list[str]:
    """``user``'s archive without its header (which holds the time of the export)."""
    sink = io.StringIO()
    await export_memory(backend, sink, users=[user])
    return sink.getvalue().splitlines()[1:]


async def _assert_gone(harness: Harness, backend: MemoryBackend, gone: _Written) -> None:
    caps = harness.caps
    scope = _scope(harness, gone.user)
    for handle in gone.handles:
        try:
            read = await backend.get_conversation(handle, user_identifier=scope)
        except NotFoundError:
            continue
        assert read.messages == [], f"get_conversation still returns {read.messages!r}"
        context = await backend.get_context(
            " ".join(gone.words), session_id=handle, user_identifier=scope
        )
        assert not [w for w in gone.words if w in context], f"get_context still holds {context!r}"
        if caps.conversation_summary:
            summary = await backend.get_conversation_summary(handle, user_identifier=scope)
            assert not [w for w in gone.words if w in summary.model_dump_json()]
        for term in [*gone.words, QUERY]:
            hits = await backend.search_messages(term, session_id=handle, user_identifier=scope)
            assert hits == [], f"search in a forgotten session found {hits!r}"
    listed = await backend.list_conversations(user_identifier=gone.user)
    assert listed == [], f"list_conversations still lists {[c.session_id for c in listed]}"
    if caps.list_sessions:
        sessions = await backend.list_sessions(user_identifier=scope)
        names = {s.session_id for s in sessions}
        assert not names & set(gone.handles), "list_sessions still lists a forgotten session"
    if caps.search_global:
        for term in [*gone.words, QUERY]:
            hits = await backend.search_messages(term, user_identifier=scope)
            assert not {str(h.id) for h in hits} & gone.ids, f"search found {term!r}"
    if caps.entities:
        owner = _entity_scope(backend, gone.user)
        assert await backend.find_entities(gone.entity, user_identifier=owner) == []
    exported = "\n".join(await _export(backend, gone.user))
    assert not [w for w in gone.words if w in exported], "export still holds the user"


class ErasureSuite(SuiteBase):
    """Scenarios of area ``erasure``."""

    @scenario(
        "erasure.nothing_left",
        "after forget_user no read API returns anything of the user (get, list, sessions, "
        "text and vector search, entities, context, summary, export) and another user's "
        "export is unchanged byte for byte",
        requires="user_erasure",
    )
    async def test_erasure_nothing_left(self, harness: Harness) -> None:
        semantic = harness.caps.vector_search
        backend = await harness.open(embedder=ConceptEmbedder()) if semantic else harness.backend
        shared = f"Shared{word()}"
        gone = await _write(harness, backend, harness.new_user(), shared, semantic)
        kept = await _write(harness, backend, harness.new_user(), shared, semantic)
        before = await _export(backend, kept.user)
        if semantic:
            hits = await backend.search_messages(QUERY, session_id=gone.handles[0])
            assert hits, "vector search found nothing before: the scenario would test nothing"
        report = await backend.forget_user(gone.user)
        assert report.counts["conversations"] == 2
        # a backend whose service does not say how many messages went reports no count
        assert report.counts.get("messages", len(gone.ids)) == len(gone.ids)
        await _assert_gone(harness, backend, gone)
        assert await _export(backend, kept.user) == before, "the other user's data changed"
        if harness.caps.entities and harness.caps.explicit_mentions:
            owner = _entity_scope(backend, kept.user)
            found = await backend.find_entities(shared, user_identifier=owner)
            assert [e.name for e in found] == [shared], "a shared entity was deleted"

    @scenario(
        "erasure.dry_run_deletes_nothing",
        "forget_user(dry_run=True) deletes nothing (the user's export is unchanged) and "
        "reports the conversations, messages and entities the erasure that follows deletes",
        requires=("user_erasure", "store_stats"),
    )
    async def test_erasure_dry_run_deletes_nothing(self, harness: Harness) -> None:
        shared = f"Shared{word()}"
        gone = await _write(harness, harness.backend, harness.new_user(), shared, False)
        await _write(harness, harness.backend, harness.new_user(), shared, False)
        before = await _export(harness.backend, gone.user)
        preview = await harness.backend.forget_user(gone.user, dry_run=True)
        assert preview.dry_run and preview.counts["conversations"] == 2, preview
        assert set(preview.counts) <= {"conversations", "messages", "entities"}, preview
        assert await _export(harness.backend, gone.user) == before, "a dry run changed data"
        report = await harness.backend.forget_user(gone.user)
        assert not report.dry_run
        for kind, count in preview.counts.items():
            assert report.counts.get(kind, count) == count, (kind, preview, report)

    @scenario(
        "erasure.rerun_is_idempotent",
        "forget_user again finds nothing (every count 0) and a user with no data is no error",
        requires="user_erasure",
    )
    async def test_erasure_rerun_is_idempotent(self, harness: Harness) -> None:
        user = harness.new_user()
        handle = await harness.new_session(user=user, create=True)
        await harness.fill(handle, 3, user=_scope(harness, user))
        first = await harness.backend.forget_user(user)
        assert first.counts.get("messages", 3) == 3 and first.counts["conversations"] == 1
        again = await harness.backend.forget_user(user)
        assert again.total == 0, f"a re-run deleted {again.counts}"
        assert (await harness.backend.forget_user(harness.new_user())).total == 0

    @scenario(
        "erasure.no_resurrection",
        "a write for the user after forget_user returned starts afresh: the same session "
        "and idempotency key bring nothing back",
        requires="user_erasure",
    )
    async def test_erasure_no_resurrection(self, harness: Harness) -> None:
        user = harness.new_user()
        scope = _scope(harness, user)
        handle = await harness.new_session(user=user, create=True)
        extras: dict[str, Any] = {}
        if harness.caps.idempotency_keys:
            extras["idempotency_key"] = "same-key"
        old = await harness.backend.add_message(
            handle, "user", "before", user_identifier=scope, **extras
        )
        await harness.backend.forget_user(user)
        if not harness.caps.auto_create_conversation:
            handle = await harness.new_session(user=user, create=True)
        new = await harness.backend.add_message(
            handle, "user", "after", user_identifier=scope, **extras
        )
        assert new.id != old.id and new.content == "after"
        assert await harness.contents(handle, user=scope) == ["after"]

    @scenario(
        "erasure.bad_input",
        "forget_user with an empty, non-string or control-character user raises "
        "InvalidRequestError naming user_identifier and deletes nothing",
        requires="user_erasure",
    )
    async def test_erasure_bad_input(self, harness: Harness) -> None:
        handle = await harness.new_session()
        await harness.fill(handle, 2)
        for bad in ("", 7, None, "a\x00b"):
            try:
                await harness.backend.forget_user(bad)  # type: ignore[arg-type]
            except InvalidRequestError as exc:
                assert exc.argument == "user_identifier", exc.argument
            else:
                raise AssertionError(f"forget_user({bad!r}) was accepted")
        assert await harness.contents(handle) == ["m0", "m1"]

    @scenario(
        "erasure.returns_under_writes",
        "forget_user returns while the user's writers keep writing into two sessions; "
        "nothing written before it started is left, and once the writers stop a second "
        "forget_user leaves nothing and reports writes_continued false",
        requires="user_erasure",
    )
    async def test_erasure_returns_under_writes(self, harness: Harness) -> None:
        user = harness.new_user()
        old = await harness.new_session(user=user, create=True)
        await harness.fill(old, 3, user=_scope(harness, user))
        writers = [_Writer(harness, user, word()) for _ in range(2)]
        async with anyio.create_task_group() as group:
            for writer in writers:
                group.start_soon(writer.run)
            with anyio.fail_after(RETURNS_WITHIN):
                while not all(w.before for w in writers):
                    await anyio.sleep(0.01)
                for writer in writers:
                    writer.started = True
                report = await harness.backend.forget_user(user)
            for writer in writers:
                writer.stop.set()
        assert isinstance(report.writes_continued, bool)
        before = {text for w in writers for text in w.before}
        left = await _all_contents(harness, user)
        assert not before & left, f"written before forget_user, still there: {before & left}"
        again = await harness.backend.forget_user(user)
        assert again.writes_continued is False
        assert await _all_contents(harness, user) == set()


async def _all_contents(harness: Harness, user: str) -> set[str]:
    """Every message content of the user's conversations."""
    scope = _scope(harness, user)
    found: set[str] = set()
    for conversation in await harness.backend.list_conversations(user_identifier=user):
        handle = conversation.session_id if harness.caps.client_chosen_ids else conversation.id
        try:
            found.update(await harness.contents(str(handle), user=scope))
        except NotFoundError:
            continue
    return found
