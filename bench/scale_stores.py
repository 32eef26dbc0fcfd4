"""The stores the scale bench grows, one context manager per backend name: each yields
the subjects to measure (memory-core, plus the peer on Bolt) on a fresh store, and
removes what it made when it ends.

Bolt and NAMS over Bolt get a Neo4j of their own (started here, its home removed at the
end, so the size on disk is theirs) unless ``NEO4J_URI`` names one; then what the bench
wrote is erased user by user (``forget_user``) and the peer's sessions by prefix.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from memory_core import MemoryBackend, open_backend

from .scale_subjects import NamsServerIds, Ours, PeerSubject

STORES = ("embedded", "bolt", "nams-embedded", "nams-bolt", "postgres")
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
async def neo4j_uri(neo4j: str | None) -> AsyncIterator[tuple[str, Path | None]]:
    """A Neo4j to use and its home (``None`` when it is not ours)."""
    uri = neo4j or os.environ.get("NEO4J_URI")
    if uri:
        yield uri, None
        return
    from memory_core_dev.neo4j_server import Neo4jServer

    server = Neo4jServer().start()
    try:
        yield server.uri, server.home
    finally:
        server.close()


async def _forget_all(subject: Ours) -> None:
    """Erase every user ``subject`` wrote for (on NAMS: each user's workspace)."""
    for user in sorted(subject.users):
        backend, who = subject.backend_for(user)
        await backend.forget_user(who or user)


@asynccontextmanager
async def embedded(tag: str, **_: Any) -> AsyncIterator[Subjects]:
    with tempfile.TemporaryDirectory(prefix="scale-embedded-") as folder:
        path = Path(folder) / "store.db"
        async with open_backend(f"sqlite:///{path}", multi_tenant=True) as backend:
            files = [path, path.with_name("store.db-wal")]
            subject = Ours("embedded", lambda u: (backend, u), _sized(lambda: files))
            subject.url = f"sqlite:///{path}"  # type: ignore[attr-defined]
            yield [subject]


@asynccontextmanager
async def bolt(tag: str, neo4j: str | None = None, **_: Any) -> AsyncIterator[Subjects]:
    from .bolt import Floor, Peer

    async with neo4j_uri(neo4j) as (uri, home):
        size = _sized(lambda: [home] if home else [])
        peer = Peer(uri)
        memory = await peer.open()
        try:
            async with open_backend(uri, multi_tenant=True) as backend:
                ours = Ours("bolt", lambda u: (backend, u), size)
                yield [ours, PeerSubject(memory, f"{tag}-peer-", size)]
                if home is None:
                    await _forget_all(ours)
                    await Floor(uri, tag).close(f"{tag}-peer-")
        finally:
            await peer.close()


@asynccontextmanager
async def _nams(
    name: str, tag: str, backend_url: str, size: Callable[[], Any]
) -> AsyncIterator[Subjects]:
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

    try:
        yield [NamsServerIds(name, backend_for, size)]
    finally:
        for backend in backends.values():
            await backend.close()
        server.stop()


@asynccontextmanager
async def nams_embedded(tag: str, **_: Any) -> AsyncIterator[Subjects]:
    with tempfile.TemporaryDirectory(prefix="scale-nams-") as folder:
        path = Path(folder) / "store.db"
        files = [path, path.with_name("store.db-wal")]
        async with _nams("nams-embedded", tag, f"sqlite:///{path}", _sized(lambda: files)) as s:
            yield s


@asynccontextmanager
async def nams_bolt(tag: str, neo4j: str | None = None, **_: Any) -> AsyncIterator[Subjects]:
    async with neo4j_uri(neo4j) as (uri, home):
        size = _sized(lambda: [home] if home else [])
        async with _nams("nams-bolt", tag, uri, size) as subjects:
            yield subjects
            if home is None:
                await _forget_all(subjects[0])


@asynccontextmanager
async def postgres(tag: str, postgres_url: str | None = None, **_: Any) -> AsyncIterator[Subjects]:
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
            yield [Ours("postgres", lambda u: (backend, u), size)]


OPENERS = {
    "embedded": embedded,
    "bolt": bolt,
    "nams-embedded": nams_embedded,
    "nams-bolt": nams_bolt,
    "postgres": postgres,
}
