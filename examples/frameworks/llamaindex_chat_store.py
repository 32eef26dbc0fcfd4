"""LlamaIndex chat store on any backend: python llamaindex_chat_store.py [URL]"""

import sys

from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms import MockLLM
from llama_index.core.memory import ChatMemoryBuffer

from memory_core.integrations import start_session
from memory_core.integrations.llamaindex import MemoryChatStore
from memory_core.sync import open_backend

with open_backend(sys.argv[1] if len(sys.argv) > 1 else "memory://") as memory:
    key = start_session(memory, "llamaindex-demo")
    store = MemoryChatStore(memory=memory)
    buffer = ChatMemoryBuffer.from_defaults(chat_store=store, chat_store_key=key)
    try:
        SimpleChatEngine.from_defaults(llm=MockLLM(max_tokens=4), memory=buffer).chat("I am Ana.")
        print([f"{m.role.value}: {m.content}" for m in buffer.get_all()])
    finally:
        store.delete_messages(key)  # a demo: leave the store as it was (a re-run starts afresh)
