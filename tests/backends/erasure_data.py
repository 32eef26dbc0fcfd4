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
