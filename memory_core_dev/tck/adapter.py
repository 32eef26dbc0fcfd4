"""The TCK's ``BaseAdapter`` over memory-core's public API (any backend URL).

Each TCK test starts from an empty memory (``clear_all_data``). On a backend that can be
opened multi-tenant, the adapter gets that by switching to a fresh ``user_identifier``
and erasing the previous one (``forget_user``): nothing is wiped that the run did not
write. Elsewhere the store must be a throwaway one (NAMS: a workspace of its own): its
conversations are cleared and the entities the test made deleted.

The backend is opened with ``strict=True``: an argument it cannot honour raises
``NotSupportedError``, which the plugin reports as not applicable.

What memory-core does not have raises ``NotImplementedError`` as the kit expects (the
Platinum operations not mapped here), so those tests fail honestly instead of being
skipped. Reasoning memory maps to the ``traces``, ``tool_stats`` and ``similar_traces``
calls; a backend without them raises ``NotSupportedError`` (not applicable). Traces are
always written for the test's user, so each test reads only its own. Entities are read by
name, updated and merged through ``get_entity_by_name``, ``update_entity`` and
``merge_entities`` (flags ``entity_updates`` and ``entity_merge``; a backend without them
raises ``NotSupportedError``, reported as not applicable).
"""

from __future__ import annotations

from typing import Any
from uuid import UUID, uuid4

from tck.adapters.base_adapter import (
    BaseAdapter,
    TCKConversation,
    TCKEntity,
    TCKFact,
    TCKMessage,
    TCKPreference,
    TCKReasoningStep,
    TCKReasoningTrace,
    TCKRelationship,
    TCKSessionInfo,
    TCKToolCall,
    TCKToolStats,
)

from memory_core import (
    Entity,
    MemoryBackend,
    Message,
    NotFoundError,
    ReasoningStep,
    ReasoningTrace,
    ToolCall,
    open_backend,
)


class MemoryCoreAdapter(BaseAdapter):
    """The TCK adapter for the memory-core backend at ``url``."""

    def __init__(self, url: str, **options: Any) -> None:
        self.url = url
        self.options = options
        self.backend: MemoryBackend | None = None
        self.user: str | None = None
        self._wrote = False
        # Entities made since the last clean memory: a store that is not multi-tenant
        # keeps them across tests unless they are deleted.
        self._entities: list[str] = []

    # ------------------------------------------------------------------ lifecycle

    async def setup(self) -> None:
        probe = open_backend(self.url, **self.options)
        tenants = probe.capabilities.multi_tenant
        await probe.close()
        # strict: an argument the backend cannot honour raises NotSupportedError (a test
        # not applicable there) instead of being dropped with a warning.
        options = {"strict": True, **self.options}
        if tenants:
            options["multi_tenant"] = True
        self.backend = open_backend(self.url, **options)
        await self.backend.connect()

    async def teardown(self) -> None:
        await self.clear_all_data()
        await self._memory().close()

    async def clear_all_data(self) -> None:
        memory = self._memory()
        if memory.multi_tenant:
            if self.user is not None and self._wrote:
                await memory.forget_user(self.user)
            self.user = f"tck-{uuid4().hex}"
        else:
            if self.user is not None and memory.capabilities.user_erasure:
                await memory.forget_user(self.user)  # the test's traces
            self.user = None
            for conversation in await memory.list_conversations(limit=10_000):
                await memory.clear_session(conversation_id=conversation.id)
            if memory.capabilities.delete_entity:
                for entity_id in self._entities:
                    await memory.delete_entity(entity_id)
        self._entities.clear()
        self._wrote = False

    def claims(self, flag: str) -> bool:
        """True when the backend declares the capability ``flag``."""
        return self._memory().capabilities.supports(flag)

    def _memory(self) -> MemoryBackend:
        if self.backend is None:
            raise RuntimeError("setup() was not called")
        return self.backend

    def _as(self) -> dict[str, Any]:
        """The user every call is made for (multi-tenant backends)."""
        return {"user_identifier": self.user} if self._memory().multi_tenant else {}

    def _writes(self) -> dict[str, Any]:
        self._wrote = True
        return self._as()

    # ------------------------------------------------------------------ short-term

    async def add_message(
        self, session_id: str, role: str, content: str, *, metadata: dict[str, Any] | None = None
    ) -> TCKMessage:
        made = await self._memory().add_message(
            session_id, role, content, metadata=metadata, **self._writes()
        )
        return _message(made)

    async def get_conversation(
        self, session_id: str, *, limit: int | None = None
    ) -> TCKConversation:
        memory = self._memory()
        try:
            found = await memory.get_conversation(session_id, limit=limit, **self._as())
        except NotFoundError:
            return TCKConversation(id=uuid4(), session_id=session_id, created_at=_now())
        return TCKConversation(
            id=found.id,
            session_id=found.session_id,
            messages=[_message(m) for m in found.messages],
            title=found.title,
            created_at=found.created_at,
            updated_at=found.updated_at,
        )

    async def search_messages(
        self,
        query: str,
        *,
        session_id: str | None = None,
        limit: int = 10,
        threshold: float = 0.7,
    ) -> list[TCKMessage]:
        memory = self._memory()
        # A threshold of 0 keeps every hit: a backend without thresholds is not asked.
        cut = None if threshold == 0.0 and not memory.capabilities.search_threshold else threshold
        hits = await memory.search_messages(
            query, session_id=session_id, limit=limit, threshold=cut, **self._as()
        )
        return [_message(m) for m in hits]

    async def list_sessions(self, *, limit: int = 100) -> list[TCKSessionInfo]:
        listed = await self._memory().list_sessions(limit=limit, **self._as())
        return [
            TCKSessionInfo(
                session_id=s.session_id,
                message_count=s.message_count,
                created_at=s.created_at,
                updated_at=s.updated_at,
            )
            for s in listed
        ]

    async def delete_message(self, message_id: UUID) -> bool:
        return await self._memory().delete_message(message_id, **self._as())

    async def clear_session(self, session_id: str) -> None:
        await self._memory().clear_session(session_id, **self._as())

    # ------------------------------------------------------------------ long-term

    async def add_entity(
        self, name: str, entity_type: str, *, description: str | None = None
    ) -> TCKEntity:
        made = await self._memory().add_entity(
            name, entity_type, description=description, **self._writes()
        )
        self._entities.append(made.id)
        return _entity(made)

    async def add_preference(
        self, category: str, preference: str, *, context: str | None = None
    ) -> TCKPreference:
        made = await self._memory().add_preference(
            category, preference, context=context, **self._writes()
        )
        return TCKPreference(
            id=UUID(made.id),
            category=made.category,
            preference=made.preference,
            context=made.context,
        )

    async def add_fact(self, subject: str, predicate: str, obj: str) -> TCKFact:
        made = await self._memory().add_fact(subject, predicate, obj, **self._writes())
        return TCKFact(
            id=UUID(made.id), subject=made.subject, predicate=made.predicate, object=made.object
        )

    async def search_entities(self, query: str, *, limit: int = 10) -> list[TCKEntity]:
        hits = await self._memory().search_entities(query, limit=limit, **self._as())
        return [_entity(e) for e in hits]

    async def search_preferences(
        self, query: str, *, category: str | None = None, limit: int = 10
    ) -> list[TCKPreference]:
        hits = await self._memory().search_preferences(
            query, category=category, limit=limit, **self._as()
        )
        return [
            TCKPreference(
                id=UUID(p.id), category=p.category, preference=p.preference, context=p.context
            )
            for p in hits
        ]

    async def get_entity_by_name(self, name: str) -> TCKEntity | None:
        memory = self._memory()
        if memory.capabilities.entity_updates:
            entity = await memory.get_entity_by_name(name, **self._as())
            return None if entity is None else _entity(entity)
        found = await memory.find_entities(name, limit=10, **self._as())
        exact = [e for e in found if e.name == name]
        return _entity(exact[0]) if exact else None

    async def get_entity(self, entity_id: UUID) -> TCKEntity:
        found = await self._memory().get_entity(str(entity_id), **self._as())
        if found is None:
            raise NotFoundError(f"entity_id: no entity {entity_id}")
        return _entity(found)

    async def update_entity(
        self, entity_id: UUID, *, name: str | None = None, description: str | None = None
    ) -> TCKEntity:
        updated = await self._memory().update_entity(
            str(entity_id), name=name, description=description, **self._writes()
        )
        return _entity(updated)

    async def merge_duplicate_entities(
        self, source_id: UUID, target_id: UUID, *, canonical_name: str | None = None
    ) -> TCKEntity:
        memory = self._memory()
        merged = await memory.merge_entities(str(source_id), str(target_id), **self._writes())
        if canonical_name is not None and canonical_name != merged.name:
            merged = await memory.update_entity(merged.id, name=canonical_name, **self._as())
        return _entity(merged)

    async def get_related_entities(
        self, entity_id: UUID, *, relationship_type: str | None = None, depth: int = 1
    ) -> list[TCKEntity]:
        found = await self._memory().related_entities(
            str(entity_id), depth=depth, types=relationship_type, **self._as()
        )
        return [_entity(e) for e in found]

    async def add_relationship(
        self,
        source_id: UUID,
        target_id: UUID,
        relationship_type: str,
        *,
        properties: dict[str, Any] | None = None,
    ) -> TCKRelationship:
        made = await self._memory().add_relationship(
            str(source_id),
            str(target_id),
            relationship_type,
            properties=properties,
            **self._writes(),
        )
        return TCKRelationship(
            id=UUID(made.id),
            source_id=UUID(made.source_id),
            target_id=UUID(made.target_id),
            relationship_type=made.type,
            properties=made.properties,
        )

    # ------------------------------------------------------------------ reasoning

    async def start_trace(self, session_id: str, task: str, **_: Any) -> TCKReasoningTrace:
        made = await self._memory().start_trace(session_id, task, **self._traced())
        return _trace(made)

    async def add_step(
        self,
        trace_id: UUID,
        *,
        thought: str | None = None,
        action: str | None = None,
        observation: str | None = None,
    ) -> TCKReasoningStep:
        made = await self._memory().add_step(
            str(trace_id),
            thought=thought,
            action=action,
            observation=observation,
            **self._traced(),
        )
        return _step(made)

    async def record_tool_call(
        self,
        step_id: UUID,
        tool_name: str,
        arguments: dict[str, Any] | None = None,
        *,
        result: Any = None,
        status: Any = "success",
        duration_ms: int | None = None,
        error: str | None = None,
    ) -> TCKToolCall:
        made = await self._memory().record_tool_call(
            str(step_id),
            tool_name,
            arguments,
            result=result,
            status=getattr(status, "value", status),
            duration_ms=duration_ms,
            error=error,
            **self._traced(),
        )
        return _tool_call(made)

    async def complete_trace(
        self, trace_id: UUID, *, outcome: str | None = None, success: bool | None = None
    ) -> TCKReasoningTrace:
        done = await self._memory().complete_trace(
            str(trace_id), outcome=outcome, success=success, **self._traced()
        )
        return _trace(done)

    async def get_trace_with_steps(self, trace_id: UUID) -> TCKReasoningTrace | None:
        found = await self._memory().get_trace(str(trace_id), **self._traced())
        return None if found is None else _trace(found)

    async def list_traces(
        self, *, session_id: str | None = None, limit: int = 100
    ) -> list[TCKReasoningTrace]:
        found = await self._memory().list_traces(session_id, limit=limit, **self._traced())
        return [_trace(t) for t in found]

    async def get_tool_stats(self, tool_name: str | None = None) -> list[TCKToolStats]:
        found = await self._memory().tool_stats(tool_name, **self._traced())
        return [
            TCKToolStats(
                name=s.name,
                total_calls=s.total_calls,
                successful_calls=s.successful_calls,
                failed_calls=s.failed_calls,
                success_rate=s.success_rate,
                avg_duration_ms=s.avg_duration_ms,
            )
            for s in found
        ]

    async def get_similar_traces(
        self, task: str, *, limit: int = 5, success_only: bool = True
    ) -> list[TCKReasoningTrace]:
        found = await self._memory().similar_traces(
            task, limit=limit, success_only=success_only, **self._traced()
        )
        return [_trace(t) for t in found]

    def _traced(self) -> dict[str, Any]:
        """Traces belong to a user on every backend: the test's user (a fresh one per
        test, so a single-tenant store's earlier traces stay out of its reads)."""
        self._wrote = True
        if self.user is None:
            self.user = f"tck-{uuid4().hex}"
        return {"user_identifier": self.user}


def _message(message: Message) -> TCKMessage:
    return TCKMessage(
        id=message.id,
        role=message.role.value,
        content=message.content,
        timestamp=message.created_at,
        embedding=message.embedding,
        metadata=message.metadata,
    )


def _entity(entity: Entity) -> TCKEntity:
    return TCKEntity(
        id=UUID(entity.id),
        name=entity.name,
        type=entity.type,
        description=entity.description,
        created_at=entity.created_at,
    )


def _now() -> Any:
    from datetime import UTC, datetime

    return datetime.now(UTC)


def _trace(trace: ReasoningTrace) -> TCKReasoningTrace:
    return TCKReasoningTrace(
        id=UUID(trace.id),
        session_id=trace.session_id,
        task=trace.task,
        steps=[_step(s) for s in trace.steps],
        outcome=trace.outcome,
        success=trace.success,
        started_at=trace.started_at,
        completed_at=trace.completed_at,
    )


def _step(step: ReasoningStep) -> TCKReasoningStep:
    return TCKReasoningStep(
        id=UUID(step.id),
        trace_id=UUID(step.trace_id),
        step_number=step.step_number,
        thought=step.thought,
        action=step.action,
        observation=step.observation,
        tool_calls=[_tool_call(c) for c in step.tool_calls],
    )


def _tool_call(call: ToolCall) -> TCKToolCall:
    return TCKToolCall(
        id=UUID(call.id),
        tool_name=call.tool_name,
        arguments=call.arguments,
        result=call.result,
        status=call.status.value,
        duration_ms=call.duration_ms,
        error=call.error,
    )
