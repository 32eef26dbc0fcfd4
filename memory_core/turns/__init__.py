"""The agent turn protocol: store every turn of an agent as a user/assistant pair.

Built only on the :class:`~memory_core.backend.MemoryBackend` contract, so it runs on every
backend, and it calls no LLM: wrap any agent callable with :func:`with_memory`, or drive
the lifecycle yourself with :class:`TurnMemory` (``open_turn`` … ``close_turn``) for
streaming or multi-step tool loops.

On every turn:

1. **Bounded retrieval.** Concrete identifiers (quoted strings, ids such as UUIDs,
   ``ORD-1234``, ``#123``, e-mail addresses, capitalized phrases such as "Acme Corp") are
   taken from the user message (at most 16, deduplicated ignoring case, in order of
   appearance) and each is looked up with ``backend.find_entities``. The union is
   deduplicated by entity id, the entities an identifier names (by id, name or alias,
   ignoring case) before the close matches a backend may add, and capped at
   ``retrieval_limit`` (8). Any failure is logged and the turn goes on with nothing
   retrieved. Where the store has its own ``open_turn`` (SQLite, PostgreSQL, Neo4j) the
   lookup is made by the statement that stores the user message (step 2), and fails
   with it.
2. **The user message** is stored with its exact content, metadata ``turn_key``
   ``"{conversation}:{turn}"``, ``sender_kind``, ``platform``, ``turn_id``, the idempotency
   key ``conversation-{conversation}-{turn}-user`` and mentions of the retrieved entities.
3. The agent runs with the retrieved entities in its context.
4. **The assistant reply** is stored the same way (``turn_key`` ``…:assistant``, key
   ``…-assistant``), mentioning the entities the reply cites or produces. When the reply
   comes with its reasoning (:class:`TurnReasoning`), that is recorded first as one
   reasoning trace, which is then linked to the reply.

Replaying a turn (same conversation and turn id) writes nothing new and returns the stored
messages. When a reply was produced, both halves are stored or :class:`TurnIncompleteError`
says which half is missing and how to complete it. On a backend without message metadata,
explicit mentions or idempotency keys (NAMS) the pair is still stored; what could not be
recorded is reported in ``not_recorded`` and replays are recognised by the rules described
on :class:`TurnMemory`.
"""

from .agent import MemoryAgent, TurnContext, with_memory
from .identifiers import MAX_IDENTIFIERS, cited_entities, extract_identifiers
from .memory import DEFAULT_REPLAY_LOOKBACK, DEFAULT_RETRIEVAL_LIMIT, TurnMemory
from .reasoning import TurnReasoning, TurnStep, TurnToolCall
from .results import (
    OpenedTurn,
    Reply,
    TurnConflictError,
    TurnIncompleteError,
    TurnNotOpenError,
    TurnResult,
)

__all__ = [
    "DEFAULT_REPLAY_LOOKBACK",
    "DEFAULT_RETRIEVAL_LIMIT",
    "MAX_IDENTIFIERS",
    "MemoryAgent",
    "OpenedTurn",
    "Reply",
    "TurnConflictError",
    "TurnContext",
    "TurnIncompleteError",
    "TurnMemory",
    "TurnNotOpenError",
    "TurnReasoning",
    "TurnResult",
    "TurnStep",
    "TurnToolCall",
    "cited_entities",
    "extract_identifiers",
    "with_memory",
]
