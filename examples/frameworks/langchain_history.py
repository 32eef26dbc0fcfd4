"""LangChain chat history on any backend: python langchain_history.py [URL]"""

import sys

from langchain_core.messages import AIMessage, HumanMessage

from memory_core.integrations import start_session
from memory_core.integrations.langchain import MemoryChatMessageHistory
from memory_core.sync import open_backend

with open_backend(sys.argv[1] if len(sys.argv) > 1 else "memory://") as memory:
    history = MemoryChatMessageHistory(memory, start_session(memory, "langchain-demo"))
    try:
        history.add_messages([HumanMessage("I am Ana."), AIMessage("Hello Ana.")])
        print([f"{m.type}: {m.text}" for m in history.messages])
    finally:
        history.clear()  # a demo: leave the store as it was (a re-run starts afresh)
