"""Microsoft Agent Framework history on any backend: python agent_framework_store.py [URL]"""

import asyncio
import sys

from agent_framework import (
    Agent,
    AgentSession,
    BaseChatClient,
    ChatResponse,
    FunctionInvocationLayer,
    Message,
)

from memory_core.integrations import astart_session
from memory_core.integrations.agent_framework import MemoryHistoryProvider
from memory_core.sync import open_backend


class Scripted(FunctionInvocationLayer, BaseChatClient):
    """Stands in for a hosted model: answers from a script (use a real client in an app)."""

    def __init__(self, replies):
        super().__init__()
        self.replies = replies

    def _inner_get_response(self, *, messages, stream, options, **kwargs):
        async def reply():
            return ChatResponse(messages=[Message("assistant", [self.replies.pop(0)])])

        return reply()


async def main(memory):
    history = MemoryHistoryProvider(memory)
    client = Scripted(["Hello Ana.", "You are Ana."])
    session_id = await astart_session(memory, "agent-framework-demo")
    try:
        agent = Agent(client, name="demo", context_providers=[history])
        saved = agent.create_session(session_id=session_id).to_dict()
        await agent.run("I am Ana.", session=AgentSession.from_dict(saved))
        again = Agent(client, name="demo", context_providers=[history])  # a new process
        answer = await again.run("Who am I?", session=AgentSession.from_dict(saved))
        print(answer.text)
        print([m.text for m in await history.get_messages(session_id)])
    finally:
        # a demo: leave the store as it was (a re-run starts afresh)
        await asyncio.to_thread(memory.clear_session, session_id)


with open_backend(sys.argv[1] if len(sys.argv) > 1 else "memory://") as memory:
    asyncio.run(main(memory))
