"""CrewAI memory on any backend with facts: python crewai_memory.py [URL]"""

import hashlib
import json
import os
import re
import sys

# A demo: CrewAI sends no telemetry and traces nothing (set these before importing it).
os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("OTEL_SDK_DISABLED", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")

from crewai import Agent, Crew, Memory, Task
from crewai.llms.base_llm import BaseLLM
from crewai.utilities.i18n import I18N_DEFAULT

from memory_core.errors import NotSupportedError
from memory_core.integrations.crewai import MemoryStorage
from memory_core.sync import open_backend

EXTRACT = I18N_DEFAULT.memory("extract_memories_system")
ANALYSE = I18N_DEFAULT.memory("save_system")
MERGE = I18N_DEFAULT.memory("consolidation_system")


class Scripted(BaseLLM):
    """Stands in for a hosted model (use a real LLM in an app): the agent answers with
    what its task quotes or the memories in its prompt; memory's own questions get fixed
    answers."""

    def call(self, messages, *args, **kwargs):
        system, last = messages[0]["content"], messages[-1]["content"]
        if system == EXTRACT:  # what to remember of a task: its answer
            return json.dumps({"memories": [last.split("Final Answer: ")[-1].split("\n")[0]]})
        if system == ANALYSE:  # where to file it
            return json.dumps({"suggested_scope": "/people", "categories": ["identity"]})
        if system == MERGE:  # a memory like one already kept: keep the old one only
            return json.dumps({"actions": [], "insert_new": False})
        recalled = re.findall(r"\(score=[0-9.]+\) (.+)", last)  # memories CrewAI added
        told = re.findall(r"says: ([^.]+\.)", last)
        answer = (recalled or told or ["I do not know."])[0]
        return f"Thought: I know this.\nFinal Answer: {answer}"


def embed(texts):
    """Stands in for an embedding model: each word counts in one of 32 dimensions."""
    vectors = []
    for text in texts:
        vector = [0.0] * 32
        for word in re.findall(r"\w+", text.lower()):
            vector[hashlib.sha256(word.encode()).digest()[0] % 32] += 1.0
        vectors.append(vector)
    return vectors


def crew(storage, task):
    llm = Scripted(model="scripted")
    agent = Agent(role="assistant", goal="Know who the user is", backstory="A demo.", llm=llm)
    work = Task(description=task, expected_output="One sentence.", agent=agent)
    memory = Memory(storage=storage, llm=llm, embedder=embed)
    return Crew(agents=[agent], tasks=[work], memory=memory)


with open_backend(sys.argv[1] if len(sys.argv) > 1 else "memory://") as backend:
    try:
        storage = MemoryStorage(backend, user_identifier="crewai-demo")
    except NotSupportedError as refused:  # NAMS keeps no facts
        print(f"not on this backend: {refused}")
    else:
        try:
            crew(storage, "The user says: I am Ana. Note who the user is.").kickoff()
            again = MemoryStorage(backend, user_identifier="crewai-demo")  # a new process
            print(crew(again, "Who is the user?").kickoff().raw)
            print([record.content for record in again.list_records()])
        finally:
            storage.reset()  # a demo: leave the store as it was (a re-run starts afresh)
