"""Strands session manager on any backend: python strands_session.py [URL]"""

import sys

from strands import Agent

from memory_core.integrations import start_session
from memory_core.integrations.strands import MemorySessionManager
from memory_core.sync import open_backend

with open_backend(sys.argv[1] if len(sys.argv) > 1 else "memory://") as memory:
    session = start_session(memory, "strands-demo")
    hello = [{"role": "user", "content": [{"text": "I am Ana."}]}]
    try:
        Agent(messages=hello, session_manager=MemorySessionManager(memory, session))
        restored = Agent(session_manager=MemorySessionManager(memory, session))  # a new process
        print(restored.messages)
    finally:
        memory.clear_session(session)  # a demo: leave the store as it was (a re-run starts afresh)
