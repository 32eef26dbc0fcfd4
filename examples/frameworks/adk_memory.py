"""Google ADK memory on any backend: python adk_memory.py [URL]"""

import asyncio
import sys

from google.adk import Runner
from google.adk.agents import LlmAgent
from google.adk.models import BaseLlm, LlmResponse
from google.adk.sessions import InMemorySessionService
from google.adk.tools import preload_memory
from google.genai import types

from memory_core import NotSupportedError
from memory_core.integrations.adk import MemoryService, memory_session_id
from memory_core.sync import open_backend

APP, USER = "adk-demo", "ana"


def text(role, words):
    return types.Content(role=role, parts=[types.Part(text=words)])


class Scripted(BaseLlm):
    """Stands in for a hosted model (use a real one in an app): it greets, and answers
    "Who am I?" from what the memory service put in the request."""

    model: str = "scripted"

    async def generate_content_async(self, llm_request, stream=False):
        said = " ".join(p.text or "" for c in llm_request.contents for p in c.parts or [])
        if "Who am I?" not in said:
            reply = "Hello Ana."
        else:
            reply = "You are Ana." if "user: I am Ana." in said else "I do not know."
        spent = types.GenerateContentResponseUsageMetadata(  # no tokens: it is a script
            prompt_token_count=0, candidates_token_count=0
        )
        yield LlmResponse(content=text("model", reply), usage_metadata=spent)


async def say(runner, session_id, words):
    await runner.session_service.create_session(app_name=APP, user_id=USER, session_id=session_id)
    async for event in runner.run_async(
        user_id=USER, session_id=session_id, new_message=text("user", words)
    ):
        if event.content and event.content.parts and event.content.parts[0].text:
            print(f"{event.author}: {event.content.parts[0].text}")
    return await runner.session_service.get_session(
        app_name=APP, user_id=USER, session_id=session_id
    )


async def main(memory):
    runner = Runner(
        app_name=APP,
        agent=LlmAgent(name="guide", model=Scripted(), tools=[preload_memory]),
        session_service=InMemorySessionService(),
        memory_service=MemoryService(memory),
    )
    try:
        monday = await say(runner, "monday", "I am Ana.")
        await runner.memory_service.add_session_to_memory(monday)  # what to remember
        await say(runner, "friday", "Who am I?")  # another session: recalled from memory
        found = await runner.memory_service.search_memory(app_name=APP, user_id=USER, query="Ana")
        print([m.content.parts[0].text for m in found.memories])
    finally:
        # a demo: leave the store as it was (a re-run starts afresh)
        name = memory_session_id(APP, "monday")
        await asyncio.to_thread(memory.clear_session, name, user_identifier=USER)


def open_for_users(url):
    """Every call one user's: multi-tenant where the store can be (NAMS keeps users apart
    by itself)."""
    try:
        return open_backend(url, multi_tenant=True)
    except NotSupportedError:
        return open_backend(url)


with open_for_users(sys.argv[1] if len(sys.argv) > 1 else "memory://") as memory:
    asyncio.run(main(memory))
