"""An echo agent with memory: the agent turn protocol in a few lines.

Run it on the embedded default (a private in-memory store)::

    python examples/echo_agent.py

or on any backend by URL (argument, else ``MEMORY_BACKEND_URL``)::

    python examples/echo_agent.py sqlite:///echo.db          # echo.db in the current folder
    python examples/echo_agent.py sqlite:////tmp/echo.db     # an absolute path: four slashes
    python examples/echo_agent.py bolt://127.0.0.1:7687

Each turn retrieves the entities the user names, stores the user message, runs the agent
(it just echoes) and stores the reply; after each turn it prints what memory holds. On a
persistent store a second run replays the same turn ids, so nothing is stored twice.
"""

from __future__ import annotations

import os
import sys

import anyio

from memory_core import MemoryBackend, open_backend
from memory_core.turns import TurnContext, TurnMemory, with_memory

TURNS = [
    "Hello! I work at Acme Corp.",
    "Can you check order ORD-1234 for Acme Corp?",
    "ok",
]
KNOWN_ENTITIES = [("Acme Corp", "ORGANIZATION"), ("ORD-1234", "OBJECT")]


def echo(user_message: str, ctx: TurnContext) -> str:
    """The 'agent': echo the message and say what memory retrieved for it."""
    known = ", ".join(entity.name for entity in ctx.retrieved) or "nothing"
    return f"You said {user_message!r}. I recall: {known}."


async def conversation_for(backend: MemoryBackend) -> str:
    """A fixed name where the caller names sessions; NAMS issues its own id."""
    if backend.capabilities.client_chosen_ids:
        return "echo-demo"
    return (await TurnMemory.start_conversation(backend, "echo-agent")).conversation_id


async def show_memory(backend: MemoryBackend, conversation_id: str) -> None:
    conversation = await backend.get_conversation(session_id=conversation_id)
    print(f"  memory holds {len(conversation.messages)} message(s):")
    for message in conversation.messages:
        mentions = ", ".join(ref.name or ref.id or "?" for ref in message.mentions)
        suffix = f"  [mentions: {mentions}]" if mentions else ""
        print(f"    {message.role.value:>9}: {message.content}{suffix}")


async def main(url: str) -> None:
    async with open_backend(url) as backend:
        if backend.capabilities.entities:
            for name, kind in KNOWN_ENTITIES:
                await backend.add_entity(name, kind)
        conversation_id = await conversation_for(backend)
        agent = with_memory(
            echo, backend=backend, conversation_id=conversation_id, platform="echo-agent"
        )
        print(f"backend: {backend.describe()}  conversation: {conversation_id}")
        for number, text in enumerate(TURNS, start=1):
            result = await agent(text, turn_id=f"turn-{number}")
            state = "replayed" if result.replayed else "stored"
            print(f"turn {number} ({state}): {text}")
            print(f"  agent: {result.text}")
            if result.not_recorded:
                print(f"  not recorded on this backend: {', '.join(result.not_recorded)}")
            await show_memory(backend, conversation_id)


if __name__ == "__main__":
    target = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("MEMORY_BACKEND_URL")
    anyio.run(main, target or "memory://")
