"""The harness: backend-neutral sessions, extra backend instances and clean-up.

Scenarios never name sessions themselves. ``await harness.new_session()`` returns a handle
to pass as ``session_id``: on backends with ``client_chosen_ids`` a fresh unique name
(``cf-…``); on backends whose store issues ids (NAMS) the ``str(conversation.id)`` of a
conversation created for it. Everything a scenario creates is removed when the harness
closes, whether the scenario passed or failed, so the suite is safe on a store it does
not own: it works only in its own sessions and users, and never wipes anything unless
``throwaway`` says the store may be wiped.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self
from uuid import uuid4

import pytest

from memory_core import (
    Capabilities,
    Entity,
    Fact,
    MemoryBackend,
    Message,
    NotFoundError,
    Preference,
    ReasoningTrace,
    Relationship,
    open_backend,
)

from .seeding import Seed

PREFIX = "cf"
EMPTY_STORE_NEEDED = (
    "n/a: needs an empty store: a multi-tenant backend (a fresh user is used) or --throwaway-store"
)
NO_SEED = (
    "n/a: reads relationships the backend cannot write (relationships is False) and the "
    "test setup gives no conformance_seed to write them"
)
ENTITIES_WOULD_STAY = (
    "n/a: creates entities, which this backend cannot delete (delete_entity is False), so "
    "they would stay in the store; runs with --throwaway-store"
)


@dataclass(frozen=True)
class _Made:
    backend: MemoryBackend
    handle: str
    user: str | None

    @property
    def scope(self) -> str | None:
        """The user to pass when reading or clearing it: a backend without
        ``user_scoped_calls`` records the user at creation but scopes by conversation
        (passing it would only warn)."""
        return self.user if self.backend.capabilities.user_scoped_calls else None


class Harness:
    """Opens the backend under test and tracks what a scenario creates.

    ``url`` and ``options`` are what :func:`memory_core.open_backend` receives.
    Use as ``async with Harness(url, options) as harness:``.
    """

    def __init__(
        self, url: str, options: dict[str, Any] | None = None, *, throwaway: bool = False
    ) -> None:
        self.url = url
        self.options = dict(options or {})
        self.throwaway = throwaway
        # The pytest item's user_properties, where a verified refusal is recorded as n/a.
        self.properties: list[tuple[str, object]] = []
        self._backends: list[MemoryBackend] = []
        self._made: list[_Made] = []
        self._entities: list[tuple[MemoryBackend, str, str | None]] = []
        # (backend, delete method, record id, user): preferences and facts made here.
        self._records: list[tuple[MemoryBackend, str, str, str | None]] = []
        # (backend, user) of the traces made here, erased at clean-up.
        self._trace_users: list[tuple[MemoryBackend, str]] = []
        self._tenant_backend: MemoryBackend | None = None
        self.seed: Seed | None = None
        """Writes what the backend reads but cannot write (see :meth:`link`)."""
        self.backend: MemoryBackend
        self.caps: Capabilities

    async def __aenter__(self) -> Self:
        self.backend = await self.open()
        self.caps = self.backend.capabilities
        return self

    async def __aexit__(
        self,
        _exc_type: type[BaseException] | None,
        _exc: BaseException | None,
        _tb: TracebackType | None,
    ) -> None:
        await self.cleanup()

    # ------------------------------------------------------------------ backends

    async def open(self, **options: Any) -> MemoryBackend:
        """Another connected instance of the backend under test (closed at clean-up)."""
        backend = open_backend(self.url, **{**self.options, **options})
        self._backends.append(backend)
        await backend.connect()
        return backend

    def open_unconnected(self, **options: Any) -> MemoryBackend:
        """Build an instance without connecting (for option checks); closed at clean-up."""
        backend = open_backend(self.url, **{**self.options, **options})
        self._backends.append(backend)
        return backend

    async def tenant_backend(self) -> MemoryBackend:
        """One instance opened with ``multi_tenant=True`` (shared within the scenario)."""
        if self._tenant_backend is None:
            self._tenant_backend = await self.open(multi_tenant=True)
        return self._tenant_backend

    # ------------------------------------------------------------------ names

    @staticmethod
    def unique(kind: str = "s") -> str:
        """A name no one else uses: ``cf-<kind>-<uuid4 hex>``."""
        return f"{PREFIX}-{kind}-{uuid4().hex}"

    def new_user(self) -> str:
        """A fresh user identifier."""
        return self.unique("user")

    async def new_session(
        self,
        *,
        backend: MemoryBackend | None = None,
        user: str | None = None,
        name: str | None = None,
        create: bool = False,
    ) -> str:
        """A handle for a new, empty session of this scenario.

        ``create=True`` makes the conversation exist now even where writing to an unknown
        session would create it (needed to list it before anything is written).
        """
        target = backend or self.backend
        caps = target.capabilities
        label = name or self.unique()
        if caps.client_chosen_ids:
            self._made.append(_Made(target, label, user))
            if create or not caps.auto_create_conversation:
                await target.create_conversation(session_id=label, user_identifier=user)
            return label
        conversation = await target.create_conversation(session_id=label, user_identifier=user)
        handle = str(conversation.id)
        self._made.append(_Made(target, handle, user))
        return handle

    def track(
        self, handle: str, *, backend: MemoryBackend | None = None, user: str | None = None
    ) -> None:
        """Clear ``handle`` at clean-up (for sessions a scenario made by hand)."""
        self._made.append(_Made(backend or self.backend, handle, user))

    def allow_entities(self) -> None:
        """Skip the scenario as n/a when it would create entities (``add_entity``, typed
        mentions, an extractor) that the backend cannot delete, unless the store is
        throwaway: the suite leaves nothing behind on a store it does not own.

        Scenarios that create entities call this before writing anything;
        :meth:`add_entity` calls it too.
        """
        if not self.caps.delete_entity and not self.throwaway:
            pytest.skip(ENTITIES_WOULD_STAY)

    async def add_entity(
        self,
        name: str,
        kind: str,
        *,
        backend: MemoryBackend | None = None,
        user_identifier: str | None = None,
        description: str | None = None,
    ) -> Entity:
        """``add_entity`` on ``backend`` (default: the backend under test), deleted at
        clean-up (see :meth:`allow_entities` for backends that cannot delete them)."""
        self.allow_entities()
        target = backend or self.backend
        entity = await target.add_entity(
            name, kind, description=description, user_identifier=user_identifier
        )
        self._entities.append((target, entity.id, user_identifier))
        return entity

    async def add_preference(
        self,
        category: str,
        preference: str,
        *,
        backend: MemoryBackend | None = None,
        user: str | None = None,
        **options: Any,
    ) -> Preference:
        """``add_preference`` on ``backend`` (default: the one under test), deleted at
        clean-up."""
        target = backend or self.backend
        made = await target.add_preference(category, preference, user_identifier=user, **options)
        self._records.append((target, "delete_preference", made.id, user))
        return made

    async def start_trace(
        self,
        session_id: str,
        task: str,
        *,
        backend: MemoryBackend | None = None,
        user: str,
        **options: Any,
    ) -> ReasoningTrace:
        """``start_trace`` on ``backend`` (default: the one under test) for a fresh
        ``user``, whose records :meth:`forget_user` erases at clean-up where the backend
        can (there is no call that deletes one trace)."""
        target = backend or self.backend
        made = await target.start_trace(session_id, task, user_identifier=user, **options)
        if (target, user) not in self._trace_users:
            self._trace_users.append((target, user))
        return made

    async def add_fact(
        self,
        subject: str,
        predicate: str,
        obj: str,
        *,
        backend: MemoryBackend | None = None,
        user: str | None = None,
        **options: Any,
    ) -> Fact:
        """``add_fact`` on ``backend`` (default: the one under test), deleted at clean-up."""
        target = backend or self.backend
        made = await target.add_fact(subject, predicate, obj, user_identifier=user, **options)
        self._records.append((target, "delete_fact", made.id, user))
        return made

    async def link(self, source_id: str, target_id: str, type: str, **options: Any) -> Relationship:
        """The relationship ``source_id`` ``type`` ``target_id``: written with
        ``add_relationship`` where the backend has ``relationships``, else through
        :attr:`seed` (the store behind a backend that only reads them), else the scenario
        is skipped as n/a. Removed with its entities at clean-up."""
        if self.caps.relationships:
            return await self.backend.add_relationship(source_id, target_id, type, **options)
        if self.seed is None:
            pytest.skip(NO_SEED)
        return await self.seed.link(source_id, target_id, type, **options)

    def forget(self, handle: str) -> None:
        """Stop tracking ``handle`` (a scenario cleared it itself)."""
        self._made = [m for m in self._made if m.handle != handle]

    def missing_session(
        self, *, backend: MemoryBackend | None = None, user: str | None = None
    ) -> str:
        """A handle naming no conversation (a fresh name, or a random id where the store
        issues ids). Cleared at the end in case the backend creates it on write."""
        target = backend or self.backend
        caps = target.capabilities
        handle = self.unique() if caps.client_chosen_ids else str(uuid4())
        self._made.append(_Made(target, handle, user))
        return handle

    # ------------------------------------------------------------------ reads

    async def messages(
        self,
        handle: str,
        *,
        backend: MemoryBackend | None = None,
        user: str | None = None,
        limit: int | None = None,
    ) -> list[Message]:
        """The messages of a session (``limit`` as for ``get_conversation``)."""
        target = backend or self.backend
        conversation = await target.get_conversation(handle, limit=limit, user_identifier=user)
        return conversation.messages

    async def contents(self, handle: str, **kwargs: Any) -> list[str]:
        """The contents of a session's messages, oldest first."""
        return [m.content for m in await self.messages(handle, **kwargs)]

    async def fill(
        self,
        handle: str,
        count: int,
        *,
        backend: MemoryBackend | None = None,
        user: str | None = None,
        label: str = "m",
    ) -> list[Message]:
        """Write ``count`` messages ``<label>0``, ``<label>1``… in one bulk call."""
        target = backend or self.backend
        batch = [
            {"role": "user" if i % 2 == 0 else "assistant", "content": f"{label}{i}"}
            for i in range(count)
        ]
        return await target.bulk_add_messages(handle, batch, user_identifier=user)

    # ------------------------------------------------------------------ scopes

    async def empty_scope(self) -> tuple[MemoryBackend, str | None]:
        """A backend and user that see an empty store, or skip the scenario as n/a.

        A multi-tenant backend gets a fresh user; otherwise the store must be declared
        throwaway, and then it is wiped.
        """
        if self.caps.multi_tenant:
            return await self.tenant_backend(), self.new_user()
        if self.throwaway:
            await self.wipe(self.backend)
            return self.backend, None
        pytest.skip(EMPTY_STORE_NEEDED)

    async def wipe(self, backend: MemoryBackend) -> None:
        """Delete every conversation ``backend`` can list. Only for throwaway stores."""
        if not self.throwaway:
            raise RuntimeError("refusing to wipe a store not declared throwaway")
        for _ in range(1000):
            listed = await backend.list_conversations(limit=1000)
            if not listed:
                return
            for conversation in listed:
                await backend.clear_session(conversation_id=conversation.id)
        raise AssertionError("the store did not become empty after clearing every conversation")

    # ------------------------------------------------------------------ clean-up

    async def cleanup(self) -> None:
        """Clear every session made here, then close every instance opened here."""
        problems: list[str] = []
        if self.seed is not None:
            await self.seed.close()
        await self._delete_records(problems)
        await self._forget_trace_users(problems)
        await self._delete_entities(problems)
        for made in reversed(self._made):
            try:
                await made.backend.clear_session(made.handle, user_identifier=made.scope)
            except NotFoundError:
                pass
            except Exception as exc:  # report every failure, but keep cleaning up
                problems.append(f"clear_session({made.handle!r}): {exc!r}")
        self._made.clear()
        for backend in reversed(self._backends):
            try:
                await backend.close()
            except Exception as exc:
                problems.append(f"close(): {exc!r}")
        self._backends.clear()
        if problems:
            raise AssertionError("clean-up failed: " + "; ".join(problems))

    async def _delete_records(self, problems: list[str]) -> None:
        """Delete the preferences and facts this scenario added (gone already is fine)."""
        for backend, method, record_id, user in reversed(self._records):
            try:
                await getattr(backend, method)(record_id, user_identifier=user)
            except Exception as exc:
                problems.append(f"{method}({record_id!r}): {exc!r}")
        self._records.clear()

    async def _forget_trace_users(self, problems: list[str]) -> None:
        """Erase the users whose traces this scenario started (where the backend can)."""
        for backend, user in reversed(self._trace_users):
            if not backend.capabilities.user_erasure:
                continue
            try:
                await backend.forget_user(user)
            except Exception as exc:
                problems.append(f"forget_user({user!r}): {exc!r}")
        self._trace_users.clear()

    async def _delete_entities(self, problems: list[str]) -> None:
        """Delete the entities this scenario added, and those its messages mention (made
        by typed mentions or an extractor), where the backend can delete entities."""
        doomed = list(self._entities)
        for made in self._made:
            if not made.backend.capabilities.delete_entity:
                continue
            try:
                read = await made.backend.get_conversation(made.handle, user_identifier=made.scope)
            except Exception:
                continue
            # entities are per user only on a multi-tenant store (else passing one warns)
            owner = made.user if made.backend.multi_tenant else None
            doomed += [
                (made.backend, ref.id, owner)
                for message in read.messages
                for ref in message.mentions
                if ref.id
            ]
        seen: set[tuple[int, str]] = set()
        for backend, entity_id, user in doomed:
            if not backend.capabilities.delete_entity or (id(backend), entity_id) in seen:
                continue
            seen.add((id(backend), entity_id))
            try:
                await backend.delete_entity(entity_id, user_identifier=user)
            except Exception as exc:
                problems.append(f"delete_entity({entity_id!r}): {exc!r}")
        self._entities.clear()
