"""NAMS workloads: the adapter against the real NAMS-compatible server, beside raw httpx.

The server (``memory-core serve``'s app under uvicorn, backed by ``memory://``) runs in a
child process (``bench.nams_server``), as the real service is remote; the floor is an
``httpx.AsyncClient`` sending the same requests the adapter sends. Each run also reports
how many requests the server saw and over how many TCP connections (``*_count``
metrics, never ratios), so a difference in request count shows.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import httpx

from memory_core import MemoryBackend, open_backend
from memory_core.backends.nams import NamsStore
from memory_core_dev.nams_server import API_KEY, NamsTestServer

from .common import (
    SEARCH_QUERY,
    agent_turns,
    cursor_before,
    ingest_metrics,
    keyset_workload,
    latency_metrics,
    rows,
)
from .core import (
    EVERY,
    FLOOR,
    OURS,
    ClientTime,
    Run,
    Selection,
    Workload,
    measure,
    median_ms,
    timed,
)
from .sizes import Sizes

ROOT = Path(__file__).resolve().parents[1]
PAGE = 200
BULK = 100


class ServerProcess:
    """``bench.nams_server`` in a child process: the client's work (and its garbage
    collections) never share an interpreter with the server's, as with the real service.
    (In one process the adapter's collections walked the in-memory store's objects too.)"""

    def __init__(self, backend_url: str = "memory://") -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bench.nams_server", backend_url],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        self.base_url = self.process.stdout.readline().strip()
        if not self.base_url.startswith("http://127.0.0.1:"):
            self.stop()
            raise RuntimeError(f"bench.nams_server did not start (said {self.base_url!r})")
        self.root = self.base_url.rsplit("/", 1)[0]

    def stop(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()


class Traffic:
    """Requests and connections the server saw since :meth:`mark` (read from its admin
    routes, outside the timed parts)."""

    def __init__(self, server: ServerProcess, headers: dict[str, str]) -> None:
        self._http = httpx.Client(base_url=server.root, headers=headers, trust_env=False)

    def mark(self) -> None:
        self._http.delete("/_admin/traffic").raise_for_status()

    def counts(self) -> dict[str, float]:
        response = self._http.get("/_admin/traffic")
        response.raise_for_status()
        seen = [r for r in response.json() if not r["path"].startswith("/_admin")]
        return {
            "requests_count": float(len(seen)),
            "connections_count": float(len({tuple(r["client"] or ()) for r in seen})),
        }

    def close(self) -> None:
        self._http.close()


async def run(
    sizes: Sizes, log: Callable[[str], None], want: Selection = EVERY
) -> list[dict[str, Any]]:
    """Every NAMS workload (those ``want`` selects); report entries."""
    server = ServerProcess()
    workspace = NamsTestServer.workspace("bench")
    headers = {"Authorization": f"Bearer {API_KEY}", "X-Workspace-Id": workspace}
    traffic = Traffic(server, headers)
    entries: list[dict[str, Any]] = []
    try:
        backend = open_backend(
            "nams+" + server.base_url,
            api_key=API_KEY,
            workspace_id=workspace,
            trust_env=False,
            session_names="server",
        )
        assert isinstance(backend.store, NamsStore)
        async with (
            backend,
            httpx.AsyncClient(base_url=server.base_url, headers=headers, trust_env=False) as client,
        ):
            steps = [
                ("single", _single_add),
                ("batch", _batch),
                ("reads", _newest),
                ("search", _search),
                ("list", _list),
            ]
            for key, step in steps:
                if want(key):
                    entries.append(await step(backend, client, traffic, sizes, log))
            if want("agent"):
                entries.append(await _agent(backend, traffic, sizes, log))
        if want("keyset"):
            entries.append(await _keyset(server, traffic, sizes, log))
    finally:
        traffic.close()
        server.stop()
    return entries


async def _conversation(client: httpx.AsyncClient) -> str:
    response = await client.post("/conversations", json={})
    response.raise_for_status()
    return str(response.json()["id"])


def _side_by_side(traffic: Traffic, ours: Run, raw: Run) -> dict[str, Run]:
    """memory-core and the raw httpx floor, each with the server's request counts."""
    return {OURS: _counted(traffic, ours), FLOOR: _counted(traffic, raw)}


def _counted(traffic: Traffic, run: Callable[[int], Any]) -> Callable[[int], Any]:
    async def wrapped(r: int) -> dict[str, float]:
        traffic.mark()
        metrics: dict[str, float] = await run(r)
        return {**metrics, **traffic.counts()}

    return wrapped


async def _single_add(
    backend: MemoryBackend,
    client: httpx.AsyncClient,
    traffic: Traffic,
    sizes: Sizes,
    log: Callable[[str], None],
) -> dict[str, Any]:
    async def ours(r: int) -> dict[str, float]:
        cid = str((await backend.create_conversation(f"single-{r}")).id)
        spent = [
            await timed(backend.add_message, cid, "user", f"single {i}")
            for i in range(sizes.singles)
        ]
        return latency_metrics(spent)

    async def raw(r: int) -> dict[str, float]:
        cid = await _conversation(client)

        async def post(i: int) -> None:
            response = await client.post(
                f"/conversations/{cid}/messages", json={"role": "user", "content": f"single {i}"}
            )
            response.raise_for_status()

        spent = [await timed(post, i) for i in range(sizes.singles)]
        return latency_metrics(spent)

    workload = Workload(
        "nams",
        "single add_message",
        f"x{sizes.singles}",
        _side_by_side(traffic, ours, raw),
    )
    workload.notes.append("request counts include one POST /conversations per run")
    return await measure(workload, sizes, log)


async def _batch(
    backend: MemoryBackend,
    client: httpx.AsyncClient,
    traffic: Traffic,
    sizes: Sizes,
    log: Callable[[str], None],
) -> dict[str, Any]:
    data = rows(sizes.batch_total)

    async def ours(r: int) -> dict[str, float]:
        cid = str((await backend.create_conversation(f"batch-{r}")).id)
        with ClientTime() as clock:
            ms = await timed(backend.add_messages_batch, cid, data, batch_size=BULK)
        return {**ingest_metrics(ms, sizes.batch_total), **clock.metrics()}

    async def raw(r: int) -> dict[str, float]:
        cid = await _conversation(client)

        async def load() -> None:
            for k in range(0, len(data), BULK):
                response = await client.post(
                    f"/conversations/{cid}/messages/bulk", json={"messages": data[k : k + BULK]}
                )
                response.raise_for_status()
                response.json()  # the stored messages, which add_messages_batch returns

        with ClientTime() as clock:
            ms = await timed(load)
        return {**ingest_metrics(ms, sizes.batch_total), **clock.metrics()}

    workload = Workload(
        "nams",
        f"batch ingest (bulk {BULK})",
        f"{sizes.batch_total}",
        _side_by_side(traffic, ours, raw),
    )
    workload.notes.append(
        "client_cpu_ms / client_gc_ms: the bench process's CPU time and collector pauses "
        "during the call (the server's are in its own process)"
    )
    return await measure(workload, sizes, log)


async def _newest(
    backend: MemoryBackend,
    client: httpx.AsyncClient,
    traffic: Traffic,
    sizes: Sizes,
    log: Callable[[str], None],
) -> dict[str, Any]:
    cid = await _conversation(client)
    point = sizes.read_points[0]
    await backend.add_messages_batch(cid, rows(point), batch_size=BULK)

    async def ours(r: int) -> dict[str, float]:
        return await median_ms(sizes.reads, backend.get_conversation, cid, limit=100)

    async def raw(r: int) -> dict[str, float]:
        async def get() -> None:
            # The same two requests: a conversation is its header (title, metadata,
            # times) and its newest messages, and the wire has no route for both.
            header = await client.get(f"/conversations/{cid}")
            header.raise_for_status()
            header.json()
            response = await client.get(f"/conversations/{cid}/messages", params={"limit": 100})
            response.raise_for_status()
            response.json()

        return await median_ms(sizes.reads, get)

    workload = Workload(
        "nams",
        "newest-100 read",
        f"{point}",
        _side_by_side(traffic, ours, raw),
    )
    workload.notes.append("floor: GET the conversation, then GET its newest 100 messages")
    return await measure(workload, sizes, log)


async def _search(
    backend: MemoryBackend,
    client: httpx.AsyncClient,
    traffic: Traffic,
    sizes: Sizes,
    log: Callable[[str], None],
) -> dict[str, Any]:
    cid = await _conversation(client)
    point = sizes.search_points[0]
    await backend.add_messages_batch(cid, rows(point), batch_size=BULK)

    async def ours(r: int) -> dict[str, float]:
        return await median_ms(
            sizes.searches, backend.search_messages, SEARCH_QUERY, session_id=cid, limit=10
        )

    async def raw(r: int) -> dict[str, float]:
        async def post() -> None:
            response = await client.post(
                f"/conversations/{cid}/search", json={"query": SEARCH_QUERY, "limit": 10}
            )
            response.raise_for_status()
            response.json()

        return await median_ms(sizes.searches, post)

    workload = Workload(
        "nams",
        "text search (matches all)",
        f"{point}",
        _side_by_side(traffic, ours, raw),
    )
    return await measure(workload, sizes, log)


async def _list(
    backend: MemoryBackend,
    client: httpx.AsyncClient,
    traffic: Traffic,
    sizes: Sizes,
    log: Callable[[str], None],
) -> dict[str, Any]:
    for _ in range(sizes.conversations):
        await _conversation(client)

    async def ours(r: int) -> dict[str, float]:
        return await median_ms(sizes.lists, backend.list_conversations, limit=sizes.list_limit)

    async def raw(r: int) -> dict[str, float]:
        async def pages() -> None:
            found, cursor = 0, None
            while found < sizes.list_limit:
                params: dict[str, Any] = {"limit": min(PAGE, sizes.list_limit - found)}
                if cursor:
                    params["cursor"] = cursor
                response = await client.get("/conversations", params=params)
                response.raise_for_status()
                body = response.json()
                found += len(body["conversations"])
                cursor = body.get("next_cursor")
                if not cursor or not body["conversations"]:
                    break

        return await median_ms(sizes.lists, pages)

    size = f"{sizes.list_limit} of {sizes.conversations}+"
    workload = Workload(
        "nams",
        "list_conversations",
        size,
        _side_by_side(traffic, ours, raw),
    )
    workload.notes.append(f"cursor paging, pages of {PAGE}")
    return await measure(workload, sizes, log)


async def _keyset(
    server: ServerProcess, traffic: Traffic, sizes: Sizes, log: Callable[[str], None]
) -> dict[str, Any]:
    """The first page and a deep page of ``list_conversations_page`` through the server
    (over ``memory://``), in a workspace of their own; the floor sends the same
    ``GET /conversations`` requests with httpx."""
    import anyio

    workspace = NamsTestServer.workspace("bench-keyset")
    headers = {"Authorization": f"Bearer {API_KEY}", "X-Workspace-Id": workspace}
    size, deep = sizes.keyset_page, sizes.keyset_deep
    backend = open_backend(
        "nams+" + server.base_url,
        api_key=API_KEY,
        workspace_id=workspace,
        trust_env=False,
        session_names="server",
    )
    async with (
        backend,
        httpx.AsyncClient(base_url=server.base_url, headers=headers, trust_env=False) as client,
    ):
        limiter = anyio.Semaphore(8)

        async def create() -> None:
            async with limiter:
                await _conversation(client)

        async with anyio.create_task_group() as tg:
            for _ in range(sizes.keyset_conversations):
                tg.start_soon(create)

        async def page(cursor: str | None) -> str | None:
            return (await backend.list_conversations_page(limit=size, cursor=cursor)).next_cursor

        async def raw_page(cursor: str | None) -> str | None:
            params: dict[str, Any] = {"limit": size}
            if cursor:
                params["cursor"] = cursor
            response = await client.get("/conversations", params=params)
            response.raise_for_status()
            found: str | None = response.json().get("next_cursor")
            return found

        far, raw_far = await cursor_before(page, deep), await cursor_before(raw_page, deep)
        note = "the server pages the backing store by its keyset cursor (one backing page each)"
        counted = partial(_counted, traffic)
        workload = keyset_workload("nams", sizes, (page, far), (raw_page, raw_far), note, counted)
        return await measure(workload, sizes, log)


async def _agent(
    backend: MemoryBackend, traffic: Traffic, sizes: Sizes, log: Callable[[str], None]
) -> dict[str, Any]:
    async def ours(r: int) -> dict[str, float]:
        cid = str((await backend.create_conversation(f"agent-{r}")).id)
        traffic.mark()
        spent = await agent_turns(backend, cid, sizes.turns)
        counts = traffic.counts()
        return {
            "ms_per_turn": statistics.median(spent),
            "requests_per_turn": counts["requests_count"] / sizes.turns,
            "connections_count": counts["connections_count"],
        }

    workload = Workload("nams", "agent turns (turn protocol)", f"{sizes.turns}", {OURS: ours})
    workload.notes.append("round trip = one HTTP request")
    return await measure(workload, sizes, log)
