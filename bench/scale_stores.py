"""The stores the scale bench grows, one context manager per kind of store: each yields
the subjects to measure on a fresh store, and removes what it made when it ends.

A store is loaded once and read by every subject over it: embedded directly and NAMS
through a server over the same file; Bolt directly and NAMS through a server over the
same Neo4j (the peer, on that Neo4j too, keeps its own data: its graph is its own).
Subjects of a store are measured only when chosen (``--only``); the direct one grows the
store either way.

Bolt gets a Neo4j of its own (started here with room for a million messages, its home
removed at the end, so the size on disk is the store's) unless ``NEO4J_URI`` names one;
then what the bench wrote is erased user by user (``forget_user``) and the peer's
sessions by prefix.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from memory_core import MemoryBackend, open_backend
from memory_core.server.hosted import TENANT_PREFIX

from .scale_subjects import NamsShared, Ours, PeerSubject

STORES = ("embedded", "bolt", "nams-embedded", "nams-bolt", "postgres")
# The kinds of store, each with the subjects it can measure (the direct one first).
KINDS = {
    "embedded": ("embedded", "nams-embedded"),
    "bolt": ("bolt", "nams-bolt"),
    "postgres": ("postgres",),
}
# Neo4j for a million messages: heap and page cache (the tests' server has 512m / 64m).
NEO4J_HEAP = "2g"
NEO4J_PAGECACHE = "2g"
Subjects = list[Any]


def tree_bytes(path: Path) -> float:
    """Bytes of every file under ``path`` (or of ``path`` itself)."""
    if path.is_file():
        return float(path.stat().st_size)
    return float(sum(p.stat().st_size for p in path.rglob("*") if p.is_file()))


def _sized(paths: Callable[[], list[Path]]) -> Callable[[], Any]:
    async def size() -> float | None:
        return sum(tree_bytes(p) for p in paths() if p.exists())

    return size


@asynccontextmanager
async def store_url(name: str, folder: Path) -> AsyncIterator[str]:
    """A fresh store of kind ``name`` (``embedded``, ``postgres`` or ``bolt``): a SQLite
    file in ``folder``, a new database on ``PG_TEST_URL`` or on a server started here, a
    Neo4j on ``NEO4J_URI`` or one started here."""
    if name == "embedded":
        yield f"sqlite:///{folder / 'store.db'}"
    elif name == "postgres":
        from .postgres import database

        async with database() as url:
            yield url
    else:
        async with neo4j_uri(None) as (uri, _, _):
            yield uri


@asynccontextmanager
async def neo4j_uri(neo4j: str | None) -> AsyncIterator[tuple[str, Path | None, list[int]]]:
    """A Neo4j to use, its home and its process (``None`` and ``[]`` when it is not ours)."""
    uri = neo4j or os.environ.get("NEO4J_URI")
    if uri:
        yield uri, None, []
        return
    from memory_core_dev.neo4j_server import Neo4jServer

    server = Neo4jServer(heap=NEO4J_HEAP, pagecache=NEO4J_PAGECACHE).start()
    try:
        yield server.uri, server.home, [server.pid] if server.pid else []
    finally:
        server.close()


def named_pids(name: str) -> list[int]:
    """Every process whose command name is ``name`` (Linux ``/proc``)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "comm").read_text().strip() == name:
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _direct(
    name: str, backend: MemoryBackend, tag: str, nams: bool, size: Callable[[], Any]
) -> Ours:
    """The direct subject: each user its own tenant, named as the NAMS server names the
    user's workspace when NAMS reads the store too (and then its sessions are marked)."""
    prefix = f"{TENANT_PREFIX}{tag}-" if nams else ""
    subject = Ours(name, lambda user: (backend, prefix + user), size, marked=nams)
    subject.tenant_prefix = prefix
    return subject


async def _forget_all(subject: Ours) -> None:
    """Erase every user ``subject`` wrote for (on NAMS: each user's workspace)."""
    for user in sorted(subject.users):
        backend, who = subject.backend_for(user)
        await backend.forget_user(who or user)


@asynccontextmanager
async def embedded(tag: str, chosen: set[str], **_: Any) -> AsyncIterator[Subjects]:
    with tempfile.TemporaryDirectory(prefix="scale-embedded-") as folder:
        path = Path(folder) / "store.db"
        url = f"sqlite:///{path}"
        files = [path, path.with_name("store.db-wal")]
        size = _sized(lambda: files)
        nams = "nams-embedded" in chosen
        async with open_backend(url, multi_tenant=True) as backend:
            direct = _direct("embedded", backend, tag, nams, size)
            direct.measured = "embedded" in chosen
            direct.url = url
            async with _nams("nams-embedded", tag, url, size, direct, nams) as served:
                yield [direct, *served]


@asynccontextmanager
async def bolt(
    tag: str, chosen: set[str], neo4j: str | None = None, **_: Any
) -> AsyncIterator[Subjects]:
    from .bolt import Floor, Peer

    async with neo4j_uri(neo4j) as (uri, home, pids):
        size = _sized(lambda: [home] if home else [])
        nams = "nams-bolt" in chosen
        peer = Peer(uri) if "bolt" in chosen else None
        memory = await peer.open() if peer else None
        try:
            async with open_backend(uri, multi_tenant=True) as backend:
                ours = _direct("bolt", backend, tag, nams, size)
                ours.measured = "bolt" in chosen
                ours.server_pids = lambda: pids
                extra = [PeerSubject(memory, f"{tag}-peer-", size)] if memory else []
                for subject in extra:
                    subject.server_pids = lambda: pids
                async with _nams("nams-bolt", tag, uri, size, ours, nams) as served:
                    yield [ours, *extra, *served]
                if home is None:
                    await _forget_all(ours)
                    if peer:
                        await Floor(uri, tag).close(f"{tag}-peer-")
        finally:
            if peer:
                await peer.close()


@asynccontextmanager
async def _nams(
    name: str, tag: str, backend_url: str, size: Callable[[], Any], direct: Ours, wanted: bool
) -> AsyncIterator[Subjects]:
    """A NAMS server over ``backend_url`` and the subject reading ``direct``'s store
    through it (nothing when not ``wanted``)."""
    if not wanted:
        yield []
        return
    from memory_core_dev.nams_server import API_KEY

    from .nams import ServerProcess

    server = ServerProcess(backend_url)
    backends: dict[str, MemoryBackend] = {}

    def backend_for(user: str) -> tuple[MemoryBackend, None]:
        # made on first use (it connects on its first call): a small step has few users
        if user not in backends:
            backends[user] = open_backend(
                "nams+" + server.base_url,
                api_key=API_KEY,
                workspace_id=f"{tag}-{user}",
                trust_env=False,
                session_names="server",
            )
        return backends[user], None

    served = NamsShared(direct, name, backend_for, size)
    served.server_pids = lambda: [server.process.pid, *direct.server_pids()]
    try:
        yield [served]
    finally:
        for backend in backends.values():
            await backend.close()
        server.stop()


@asynccontextmanager
async def postgres(
    tag: str, chosen: set[str], postgres_url: str | None = None, **_: Any
) -> AsyncIterator[Subjects]:
    import psycopg

    from .postgres import database

    async with database(postgres_url) as url:

        async def size() -> float | None:
            async with await psycopg.AsyncConnection.connect(url) as conn:
                row = await (
                    await conn.execute("SELECT pg_database_size(current_database())")
                ).fetchone()
            return float(row[0]) if row else None

        async with open_backend(url, multi_tenant=True) as backend:
            subject = Ours("postgres", lambda u: (backend, u), size)
            subject.server_pids = lambda: named_pids("postgres")
            yield [subject]


OPENERS = {"embedded": embedded, "bolt": bolt, "postgres": postgres}
