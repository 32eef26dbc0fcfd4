"""The reasoning hooks of :class:`~memory_core.backends.embedded.store.EmbeddedStore`:
traces, steps, tool calls, statistics, similar traces and links, each one transaction.
Writes of one record and reads of one trace are ``small`` (see
:mod:`~memory_core.backends.embedded.database`); listings, searches and statistics go to
the worker threads."""

from __future__ import annotations

from memory_core.store import ReasoningStep, ReasoningTrace, ToolCall, ToolStats, TracePage
from memory_core.store import requests as rq

from . import trace_search, traces
from .database import Database


class EmbeddedReasoning:
    """Mixed into the embedded store, whose ``_store`` is the :class:`Database`."""

    _store: Database

    async def start_trace(self, req: rq.StartTrace) -> ReasoningTrace:
        return await self._store.write(lambda c: traces.start(c, req), small=True)

    async def add_step(self, req: rq.AddStep) -> ReasoningStep:
        return await self._store.write(lambda c: traces.add_step(c, req), small=True)

    async def record_tool_call(self, req: rq.RecordToolCall) -> ToolCall:
        return await self._store.write(lambda c: traces.record_tool_call(c, req), small=True)

    async def complete_trace(self, req: rq.CompleteTrace) -> ReasoningTrace:
        return await self._store.write(lambda c: traces.complete(c, req), small=True)

    async def get_trace(self, req: rq.GetTrace) -> ReasoningTrace | None:
        return await self._store.read(lambda c: traces.get(c, req), small=True)

    async def list_traces(self, req: rq.ListTraces) -> TracePage:
        return await self._store.call(lambda c: traces.list_traces(c, req), write=False)

    async def link_trace(self, req: rq.LinkTrace) -> ReasoningTrace:
        return await self._store.write(lambda c: traces.link(c, req), small=True)

    async def tool_stats(self, req: rq.ToolStatsQuery) -> list[ToolStats]:
        return await self._store.call(lambda c: trace_search.tool_stats(c, req), write=False)

    async def similar_traces(self, req: rq.SimilarTraces) -> list[ReasoningTrace]:
        return await self._store.call(lambda c: trace_search.similar(c, req), write=False)

    async def search_steps(self, req: rq.SearchSteps) -> list[ReasoningStep]:
        return await self._store.call(lambda c: trace_search.search_steps(c, req), write=False)
