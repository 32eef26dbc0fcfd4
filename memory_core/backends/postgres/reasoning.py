"""The reasoning hooks of :class:`~memory_core.backends.postgres.store.PostgresStore`:
traces, steps, tool calls, statistics, similar traces and links (see :mod:`.traces` and
:mod:`.trace_search`).

A step and a tool call are each one replayable statement outside a transaction block; a
start, a completion and links run in a transaction; reads run outside one.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import TypeVar
from uuid import uuid4

from memory_core.store import ReasoningStep, ReasoningTrace, ToolCall, ToolStats, TracePage
from memory_core.store import requests as rq

from . import trace_search, traces
from .tx import Tx

T = TypeVar("T")


class PostgresReasoning:
    """Mixed into the PostgreSQL store, whose ``_run`` runs the work of each hook."""

    async def _run(
        self, work: Callable[[Tx], Awaitable[T]], *, write: bool, autocommit: bool = False
    ) -> T:
        raise NotImplementedError  # PostgresStore's

    async def _reasoning_read(self, work: Callable[[Tx], Awaitable[T]]) -> T:
        return await self._run(work, write=False, autocommit=True)

    async def start_trace(self, req: rq.StartTrace) -> ReasoningTrace:
        now = datetime.now(UTC)
        return await self._run(lambda tx: traces.start(tx, req, now), write=True)

    async def add_step(self, req: rq.AddStep) -> ReasoningStep:
        ident, now = str(uuid4()), datetime.now(UTC)
        work = lambda tx: traces.add_step(tx, req, ident, now)  # noqa: E731
        return await self._run(work, write=True, autocommit=True)

    async def record_tool_call(self, req: rq.RecordToolCall) -> ToolCall:
        ident, now = str(uuid4()), datetime.now(UTC)
        work = lambda tx: traces.record_call(tx, req, ident, now)  # noqa: E731
        return await self._run(work, write=True, autocommit=True)

    async def complete_trace(self, req: rq.CompleteTrace) -> ReasoningTrace:
        now = datetime.now(UTC)
        return await self._run(lambda tx: traces.complete(tx, req, now), write=True)

    async def get_trace(self, req: rq.GetTrace) -> ReasoningTrace | None:
        return await self._reasoning_read(lambda tx: traces.get(tx, req))

    async def list_traces(self, req: rq.ListTraces) -> TracePage:
        return await self._reasoning_read(lambda tx: traces.list_traces(tx, req))

    async def tool_stats(self, req: rq.ToolStatsQuery) -> list[ToolStats]:
        return await self._reasoning_read(lambda tx: trace_search.tool_stats(tx, req))

    async def similar_traces(self, req: rq.SimilarTraces) -> list[ReasoningTrace]:
        return await self._reasoning_read(lambda tx: trace_search.similar(tx, req))

    async def search_steps(self, req: rq.SearchSteps) -> list[ReasoningStep]:
        return await self._reasoning_read(lambda tx: trace_search.search_steps(tx, req))

    async def link_trace(self, req: rq.LinkTrace) -> ReasoningTrace:
        return await self._run(lambda tx: traces.link(tx, req), write=True)
