"""A LangGraph store on any backend with facts: python langgraph_store.py [URL]"""

import sys
from typing import TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from memory_core.errors import NotSupportedError
from memory_core.integrations.langgraph import MemoryStore
from memory_core.sync import open_backend


class State(TypedDict):
    name: str
    reply: str


def greet(state: State, runtime: Runtime) -> dict:  # no LLM: the store is the point
    profile = runtime.store.get(("profiles",), state["name"])
    visits = 1 + (profile.value["visits"] if profile else 0)
    runtime.store.put(("profiles",), state["name"], {"name": state["name"], "visits": visits})
    return {"reply": f"Hello {state['name']}, visit {visits}."}


builder = StateGraph(State)
builder.add_node("greet", greet)
builder.add_edge(START, "greet")
builder.add_edge("greet", END)

with open_backend(sys.argv[1] if len(sys.argv) > 1 else "memory://") as memory:
    try:
        store = MemoryStore(memory, user_identifier="langgraph-demo")
    except NotSupportedError as refused:  # NAMS keeps no facts
        print(f"not on this backend: {refused}")
    else:
        graph = builder.compile(store=store)
        try:
            for _ in range(2):  # a second run of the graph finds what the first stored
                print(graph.invoke({"name": "Ana"})["reply"])
            print(store.search(("profiles",), filter={"visits": {"$gte": 2}}))
        finally:  # a demo: leave the store as it was (a re-run starts afresh)
            for item in store.search(("profiles",), limit=100):
                store.delete(item.namespace, item.key)
