"""What the residue tests of ``forget_user`` write for a user: messages with metadata,
mentions (an entity of the user's own and one shared with the other user), idempotency
keys and a batch, in two sessions; and the strings that must be gone with the user."""

from __future__ import annotations

from memory_core import EntityRef, MemoryBackend

SHARED_ENTITY = "Sharedthing"


async def write_user(memory: MemoryBackend, user: str, tag: str) -> list[str]:
    """Write as ``user``; return every string unique to them (``tag`` tells users apart
    in contents, keys and entity names)."""
    markers = [user]
    for index in range(2):
        session = f"sess{tag}{index}-{user}"
        key = f"idem{tag}{index}"
        stored = await memory.add_message(
            session,
            "user",
            f"contentword{tag}{index} hello",
            metadata={"metakey": f"metaval{tag}{index}"},
            idempotency_key=key,
            extraction_mode="explicit",
            explicit_mentions=[
                EntityRef(name=f"Entname{tag}", type="PERSON"),
                EntityRef(name=SHARED_ENTITY, type="CONCEPT"),
            ],
            user_identifier=user,
        )
        await memory.add_messages_batch(
            session,
            [{"role": "assistant", "content": f"replyword{tag}{index} again"}],
            user_identifier=user,
        )
        conversation = await memory.get_conversation(session, user_identifier=user)
        markers += [
            session,
            key,
            f"contentword{tag}{index}",
            f"replyword{tag}{index}",
            f"metaval{tag}{index}",
            str(stored.id),
            str(conversation.id),
            f"Entname{tag}",
        ]
    return markers


async def write_traces(memory: MemoryBackend, user: str, tag: str) -> list[str]:
    """After :func:`write_user`: a completed trace of the user with two steps, a tool call
    on the first, linked to one of the user's messages and their entity; return the
    strings unique to it."""
    session = f"sess{tag}0-{user}"
    trace = await memory.start_trace(
        session,
        f"taskword{tag} plan",
        metadata={"tracekey": f"traceval{tag}"},
        user_identifier=user,
    )
    first = await memory.add_step(
        trace.id, thought=f"thoughtword{tag}", action=f"actionword{tag}", user_identifier=user
    )
    await memory.add_step(trace.id, observation=f"observeword{tag}", user_identifier=user)
    call = await memory.record_tool_call(
        first.id,
        f"toolname{tag}",
        {"argkey": f"argval{tag}"},
        result={"out": f"resultword{tag}"},
        status="error",
        duration_ms=7,
        error=f"errorword{tag}",
        user_identifier=user,
    )
    conversation = await memory.get_conversation(session, user_identifier=user)
    owner = user if memory.multi_tenant else None  # entities are shared otherwise
    [entity] = await memory.find_entities(f"Entname{tag}", user_identifier=owner)
    await memory.link_trace(
        trace.id,
        message_ids=[conversation.messages[0].id],
        entity_ids=[entity.id],
        user_identifier=user,
    )
    await memory.complete_trace(
        trace.id, outcome=f"outcomeword{tag}", success=True, user_identifier=user
    )
    return [
        trace.id,
        first.id,
        call.id,
        f"taskword{tag}",
        f"traceval{tag}",
        f"thoughtword{tag}",
        f"actionword{tag}",
        f"observeword{tag}",
        f"toolname{tag}",
        f"argval{tag}",
        f"resultword{tag}",
        f"errorword{tag}",
        f"outcomeword{tag}",
    ]
