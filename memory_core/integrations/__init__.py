"""Agent-framework integrations over any backend (each needs its own extra).

* :mod:`memory_core.integrations.langchain` — ``pip install "memory-core[langchain]"``
* :mod:`memory_core.integrations.openai_agents` — ``memory-core[openai-agents]``
* :mod:`memory_core.integrations.pydantic_ai` — ``memory-core[pydantic-ai]``
* :mod:`memory_core.integrations.llamaindex` — ``memory-core[llamaindex]``
* :mod:`memory_core.integrations.strands` — ``memory-core[strands]``
* :mod:`memory_core.integrations.langgraph` — ``memory-core[langgraph]`` (a ``BaseStore``)
* :mod:`memory_core.integrations.agent_framework` — ``memory-core[agent-framework]``
* :mod:`memory_core.integrations.adk` — ``memory-core[adk]`` (a Google ADK memory service)
* :mod:`memory_core.integrations.crewai` — ``memory-core[crewai]`` (a CrewAI memory
  storage; not installable beside ``memory-core[mcp]``)
* :mod:`memory_core.integrations.mcp_server` — ``memory-core[mcp]`` (``memory-core mcp URL``)

Every integration is keyed by a session id and works on any backend; capability flags
decide what each framework method can do (a missing capability raises
:class:`~memory_core.errors.NotSupportedError`, never loses data silently).
"""

from __future__ import annotations

from ._bridge import Memory, MemoryBridge, astart_session, start_session

__all__ = ["Memory", "MemoryBridge", "astart_session", "start_session"]
