"""OpenAI Agents SDK session on any backend: python openai_agents_session.py [URL]"""

import asyncio
import sys

from memory_core.integrations import astart_session
from memory_core.integrations.openai_agents import MemorySession
from memory_core.sync import open_backend


async def main(memory):  # pass session=... to agents.Runner.run in a real app
    session = MemorySession(memory, await astart_session(memory, "agents-demo"))
    try:
        await session.add_items([{"role": "user", "content": "I am Ana."}])
        print(await session.get_items(limit=10))
    finally:
        await session.clear_session()  # a demo: leave the store as it was (a re-run starts afresh)


with open_backend(sys.argv[1] if len(sys.argv) > 1 else "memory://") as memory:
    asyncio.run(main(memory))
