"""Reasoning-memory workloads (``python -m bench --workloads reasoning``): traces, steps
and tool calls on embedded, PostgreSQL and Bolt, beside the floor
(:mod:`bench.reasoning_floors`) and, on Bolt, the reference library's
``ReasoningMemory``.

- **add_step + record_tool_call**: a step with one tool call on an open trace (a new
  trace each repeat); p50/p95 of the pair. Target: at most 1.3x the floor's two
  INSERTs/CREATEs.
- **tool_stats**: one user's statistics of one tool, and of every tool, in a store where
  that user holds ``reasoning_traces`` traces of one step and 10 tool calls each
  (100k calls at ``--full``), beside another user holding a tenth as many. The *common*
  tool is called in every trace; the *rare* tool only in the first tenth of them, so
  its call count stays the same while the store grows tenfold. Both are timed at a
  tenth of the traces and at all of them: does one tool's statistics grow with the
  number of traces? Target: at most 2x the floor's aggregate query.
- **similar_traces**: a two-word task among the user's traces (about 2% share a word;
  nine in ten traces succeeded), the best 5. Target: at most 2x the floor's text query.

Every store is filled through memory-core's public API. The reference library reads
tool statistics from its ``Tool`` nodes' running totals (every user's calls together)
and, with no embedder, finds no similar traces, so it is beside memory-core on the
step and on the statistics only.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from memory_core import MemoryBackend

from .common import latency_metrics
from .core import PEER, Workload, measure
from .long_term import _reads
from .sizes import Sizes

_FIRST = [f"a{i:03d}" for i in range(97)]
_SECOND = [f"b{i:03d}" for i in range(89)]
_THIRD = [f"c{i:03d}" for i in range(83)]
QUERY = f"{_FIRST[5]} {_SECOND[11]}"  # each in about 1 task in 90
TARGETS = {"step": 1.3, "stats": 2.0, "similar": 2.0}
CALLS_PER_TRACE = 10
STATUSES = ("success", "success", "success", "failure", "success", "timeout", "success")
SIMILAR_LIMIT = 5
_CHUNK = 8  # traces filled at once (on Neo4j, more wait on the Tool nodes)


def task(i: int) -> str:
    """The ``i``-th generated task."""
    return f"plan {_FIRST[i % 97]} with {_SECOND[(i * 7) % 89]} for {_THIRD[(i * 13) % 83]}"


@dataclass(frozen=True)
class Tools:
    """The tool names of one run: ``common`` is called in every trace, ``rare`` once in
    each of the first ``rare_traces`` traces (the others call ``other`` instead)."""

    prefix: str
    rare_traces: int

    @property
    def common(self) -> str:
        return f"{self.prefix}tool-0"

    @property
    def rare(self) -> str:
        return f"{self.prefix}tool-rare"

    def of_trace(self, i: int) -> list[str]:
        """The tools trace ``i`` calls, in order."""
        last = self.rare if i < self.rare_traces else f"{self.prefix}tool-9"
        names = [f"{self.prefix}tool-{k}" for k in range(CALLS_PER_TRACE - 1)] + [last]
        # Traces filled at once call the tools in turn from different ones: on Neo4j
        # each call updates its Tool node, and calls of one tool at once wait for it.
        shift = i % CALLS_PER_TRACE
        return names[shift:] + names[:shift]


@dataclass
class Ops:
    """What one subject does: each operation, or None where it has none. ``step`` adds
    one step with one tool call to a trace it started for ``user``."""

    start: Callable[[str, str], Awaitable[str]] | None
    step: Callable[[str, int], Awaitable[Any]] | None
    stats: Callable[[str, str | None], Awaitable[Sequence[Any]]] | None = None
    similar: Callable[[str, str], Awaitable[Sequence[Any]]] | None = None


def ours(backend: MemoryBackend, user: str, tool: str) -> Ops:
    """memory-core's public API."""

    async def start(session: str, name: str) -> str:
        return str((await backend.start_trace(session, name, user_identifier=user)).id)

    async def step(trace: str, i: int) -> None:
        added = await backend.add_step(
            trace, thought=f"think {i}", action=f"call {tool}", user_identifier=user
        )
        await backend.record_tool_call(
            added.id,
            tool,
            {"q": i},
            result={"hits": i % 7},
            status="success",
            duration_ms=i % 500,
            user_identifier=user,
        )

    async def stats(who: str, name: str | None) -> Sequence[Any]:
        return await backend.tool_stats(name, user_identifier=who)

    async def similar(who: str, text: str) -> Sequence[Any]:
        return await backend.similar_traces(text, limit=SIMILAR_LIMIT, user_identifier=who)

    return Ops(start, step, stats, similar)


async def fill(
    backend: MemoryBackend, user: str, tools: Tools, first: int, last: int, session: str
) -> None:
    """Traces ``first`` to ``last - 1`` of ``user`` through the public API: one step,
    ten tool calls (statuses mixed, every tenth without a duration), then completed
    (every tenth trace failed)."""

    async def one(i: int) -> None:
        trace = await backend.start_trace(session, task(i), user_identifier=user)
        step = await backend.add_step(trace.id, thought=f"work on {i}", user_identifier=user)
        for k, name in enumerate(tools.of_trace(i)):
            n = i * CALLS_PER_TRACE + k
            await backend.record_tool_call(
                step.id,
                name,
                {"n": n},
                result={"ok": n % 3},
                status=STATUSES[n % len(STATUSES)],
                duration_ms=None if n % 10 == 9 else n % 500,
                user_identifier=user,
            )
        await backend.complete_trace(
            trace.id, outcome="done", success=i % 10 != 9, user_identifier=user
        )

    for start in range(first, last, _CHUNK):
        await asyncio.gather(*(one(i) for i in range(start, min(start + _CHUNK, last))))


async def run(
    name: str,
    backend: MemoryBackend,
    subjects: dict[str, Ops],
    sizes: Sizes,
    log: Callable[[str], None],
    prefix: str,
    notes: dict[str, str],
    settle: Callable[[], Awaitable[None]] | None = None,
) -> list[dict[str, Any]]:
    """Every reasoning workload of backend ``name``: ``subjects`` maps memory-core, the
    floor and the peer to their :class:`Ops`; users, sessions and tools written start
    with ``prefix``; ``notes`` says what the floor (and peer) does, by workload key;
    ``settle`` runs after each fill (PostgreSQL: ``ANALYZE``)."""
    entries = [await _steps(name, subjects, sizes, log, prefix, notes)]
    user, traces = f"{prefix}agent", sizes.reasoning_traces
    tools = Tools(prefix, max(1, traces // 10))
    session = f"{prefix}session"
    await fill(backend, f"{prefix}other", tools, 0, traces // 10, f"{prefix}other-session")
    for first, last in ((0, traces // 10), (traces // 10, traces)):
        await fill(backend, user, tools, first, last, session)
        if settle is not None:
            await settle()
        size = f"{last} traces"
        kinds = [("common tool", tools.common), ("rare tool", tools.rare)]
        if last == traces:
            kinds.append(("all tools", None))
        for label, tool in kinds:
            entries.append(
                await _stats(name, subjects, sizes, log, (user, tool), label, size, notes)
            )
    entries.append(await _similar(name, subjects, sizes, log, user, f"{traces} traces", notes))
    return entries


async def _steps(
    name: str,
    subjects: dict[str, Ops],
    sizes: Sizes,
    log: Callable[[str], None],
    prefix: str,
    notes: dict[str, str],
) -> dict[str, Any]:
    def subject(label: str, ops: Ops) -> Callable[[int], Awaitable[dict[str, float]]]:
        assert ops.start is not None and ops.step is not None
        start, step = ops.start, ops.step

        async def each(r: int) -> dict[str, float]:
            trace = await start(f"{prefix}{label}-steps-{r}", f"steps of repeat {r}")
            spent = []
            for i in range(sizes.reasoning_steps):
                started = time.perf_counter()
                await step(trace, i)
                spent.append((time.perf_counter() - started) * 1000)
            return latency_metrics(spent)

        return each

    runs = {label: subject(label, ops) for label, ops in subjects.items() if ops.step is not None}
    workload = Workload(name, "add_step + record_tool_call", f"x{sizes.reasoning_steps}", runs)
    workload.notes += [notes["step"]] + ([notes["peer_step"]] if PEER in subjects else [])
    workload.extra["target_vs_floor"] = TARGETS["step"]
    return await measure(workload, sizes, log)


async def _stats(
    name: str,
    subjects: dict[str, Ops],
    sizes: Sizes,
    log: Callable[[str], None],
    query: tuple[str, str | None],
    kind: str,
    size: str,
    notes: dict[str, str],
) -> dict[str, Any]:
    user, tool = query

    def subject(ops: Ops) -> Callable[[int], Awaitable[dict[str, float]]]:
        assert ops.stats is not None
        return _reads(sizes, [partial(ops.stats, user, tool)] * sizes.reasoning_reads)

    runs = {label: subject(ops) for label, ops in subjects.items() if ops.stats is not None}
    workload = Workload(name, f"tool_stats ({kind})", size, runs)
    workload.notes.append(notes["stats"])
    if PEER in runs:
        workload.notes.append(notes["peer_stats"])
    workload.extra["target_vs_floor"] = TARGETS["stats"]
    return await measure(workload, sizes, log)


async def _similar(
    name: str,
    subjects: dict[str, Ops],
    sizes: Sizes,
    log: Callable[[str], None],
    user: str,
    size: str,
    notes: dict[str, str],
) -> dict[str, Any]:
    def subject(ops: Ops) -> Callable[[int], Awaitable[dict[str, float]]]:
        assert ops.similar is not None
        return _reads(sizes, [partial(ops.similar, user, QUERY)] * sizes.reasoning_reads)

    runs = {label: subject(ops) for label, ops in subjects.items() if ops.similar is not None}
    workload = Workload(name, "similar_traces (top 5)", size, runs)
    workload.notes.append(notes["similar"])
    workload.extra["target_vs_floor"] = TARGETS["similar"]
    return await measure(workload, sizes, log)
