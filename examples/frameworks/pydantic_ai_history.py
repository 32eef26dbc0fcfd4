"""Pydantic AI message history on any backend: python pydantic_ai_history.py [URL]"""

import sys

from pydantic_ai import Agent
from pydantic_ai.models.test import TestModel

from memory_core.integrations import start_session
from memory_core.integrations.pydantic_ai import MemoryMessageHistory
from memory_core.sync import open_backend

with open_backend(sys.argv[1] if len(sys.argv) > 1 else "memory://") as memory:
    history = MemoryMessageHistory(memory, start_session(memory, "pydantic-ai-demo"))
    agent = Agent(TestModel(custom_output_text="Hello Ana."))
    try:
        for prompt in ("I am Ana.", "Who am I?"):
            result = agent.run_sync(prompt, message_history=history.load())
            history.save(result.new_messages())
        print(len(history.load()), "messages stored")
    finally:
        history.clear()  # a demo: leave the store as it was (a re-run starts afresh)
