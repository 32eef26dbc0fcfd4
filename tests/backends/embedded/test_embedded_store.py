"""URLs, persistence, lifecycle and error translation of the embedded backend."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import anyio
import pytest
from embedded_support import db_url_fixture, memory_fixture  # noqa: F401

from memory_core import (
    Capabilities,
    ConfigurationError,
    HashingEmbedder,
    InvalidRequestError,
    MemoryBackend,
    NotFoundError,
    TransportError,
    open_backend,
    store_class,
)
from memory_core.backends.embedded import EmbeddedStore
from memory_core.backends.embedded.location import parse_location
from memory_core.backends.embedded.schema import SCHEMA_VERSION

pytestmark = pytest.mark.anyio


def test_capabilities_are_declared_once_on_the_class() -> None:
    caps = EmbeddedStore.capabilities
    assert isinstance(caps, Capabilities)
    assert "capabilities" in EmbeddedStore.__dict__
    claimed = {name for name in caps.flag_names() if caps.supports(name)}
    assert claimed == set(caps.flag_names()) - {"observations", "reflections", "extraction_status"}
    assert caps.max_messages_per_read is None
    assert caps.default_messages_per_read == 1000
    assert caps.max_page_size is None and caps.max_bulk_messages is None
    assert EmbeddedStore.name == "embedded"


def test_registry_maps_both_schemes() -> None:
    assert store_class("memory") is EmbeddedStore
    assert store_class("sqlite") is EmbeddedStore


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("memory://", None),
        ("MEMORY://", None),
        ("sqlite:///:memory:", None),
        ("sqlite:///relative/dir/x.db", Path("relative/dir/x.db")),
        ("sqlite:////abs/x.db", Path("/abs/x.db")),
    ],
)
def test_parse_location(url: str, path: Path | None) -> None:
    assert parse_location(url).path == path


@pytest.mark.parametrize(
    "url", ["memory://named", "sqlite://", "sqlite:///", "sqlite://host/x.db", "postgres://x", 5]
)
def test_bad_urls_are_configuration_errors(url: object) -> None:
    """The embedded store itself refuses a URL that is not its own (``open_backend``
    would pick another store for ``postgres://``)."""
    with pytest.raises(ConfigurationError):
        MemoryBackend.over(EmbeddedStore, url)  # type: ignore[arg-type]


def test_options_are_checked() -> None:
    with pytest.raises(ConfigurationError):
        open_backend("memory://", colour="red")
    with pytest.raises(ConfigurationError):
        open_backend("memory://", busy_timeout=-1)
    with pytest.raises(ConfigurationError):
        open_backend("memory://", busy_timeout="5")
    backend = open_backend("memory://", busy_timeout=0.5, strict=True)
    assert isinstance(backend.store, EmbeddedStore)


async def test_describe_and_repr(db_url: str) -> None:
    memory = open_backend("memory://")
    assert memory.describe() == "memory://"
    assert "memory://" in repr(memory)
    assert open_backend(db_url).describe() == db_url


async def test_memory_stores_are_private_per_object() -> None:
    async with open_backend() as first, open_backend("memory://") as second:
        await first.add_message("s", "user", "only in the first")
        assert (await second.get_conversation("s")).messages == []
        assert await second.list_sessions() == []


async def test_file_store_persists_across_reopening(db_url: str) -> None:
    metadata = {"nested": {"x": [1, True, None]}}
    async with open_backend(db_url) as backend:
        first = await backend.add_message("s", "user", "kept\x00 on disk", metadata=metadata)
        entity = await backend.add_entity("Disk", "object")
        await backend.add_message(
            "s",
            "assistant",
            "two",
            extraction_mode="explicit",
            explicit_mentions=[{"id": entity.id}],
        )
    path = Path(db_url.removeprefix("sqlite:///"))
    assert path.exists()
    async with open_backend(db_url) as reopened:
        conversation = await reopened.get_conversation("s")
        assert conversation.messages[0] == first
        assert conversation.messages[1].mentions[0].id == entity.id
        assert [h.content for h in await reopened.search_messages("disk")] == ["kept\x00 on disk"]
        third = await reopened.add_message("s", "user", "three")
        assert third.created_at >= conversation.messages[-1].created_at
        assert [m.content for m in (await reopened.get_conversation("s")).messages][-1] == "three"


async def test_file_store_uses_wal_and_records_the_schema_version(db_url: str) -> None:
    async with open_backend(db_url) as backend:
        await backend.add_message("s", "user", "x")
    with sqlite3.connect(db_url.removeprefix("sqlite:///")) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        version = conn.execute("SELECT value FROM schema_info WHERE key = 'version'").fetchone()
        assert version[0] == str(SCHEMA_VERSION)
    conn.close()


async def test_relative_path_is_created_under_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data" / "dir").mkdir(parents=True)
    async with open_backend("sqlite:///data/dir/rel.db") as backend:
        await backend.add_message("s", "user", "x")
    assert (tmp_path / "data" / "dir" / "rel.db").exists()


async def test_a_missing_folder_is_an_error_naming_it_and_nothing_is_created(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigurationError, match="nonexistent-dir"):
        await open_backend("sqlite:///nonexistent-dir/x.db").connect()
    assert list(tmp_path.iterdir()) == []


async def test_the_default_store_creates_its_own_data_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "data" / "memory-core" / "memory.db"
    monkeypatch.setattr("memory_core.backends.embedded.database.default_store_path", lambda: path)
    async with open_backend(f"sqlite:///{path}") as backend:
        await backend.add_message("s", "user", "x")
    assert path.exists()


async def test_create_false_opens_an_existing_file_and_never_makes_one(
    db_url: str, tmp_path: Path
) -> None:
    with pytest.raises(NotFoundError, match=r"store\.db"):
        await open_backend(db_url, create=False).connect()
    assert list(tmp_path.iterdir()) == []
    async with open_backend(db_url) as backend:
        await backend.add_message("s", "user", "x")
    async with open_backend(db_url, create=False) as backend:
        assert len((await backend.get_conversation("s")).messages) == 1


async def test_two_backends_share_one_file(db_url: str) -> None:
    async with open_backend(db_url) as one, open_backend(db_url) as two:
        async with anyio.create_task_group() as group:
            for i in range(10):
                group.start_soon(one.add_message, "s", "user", f"one {i}")
                group.start_soon(two.add_message, "s", "user", f"two {i}")
        messages = (await one.get_conversation("s")).messages
        assert len(messages) == 20
        assert [m.id for m in (await two.get_conversation("s")).messages] == [
            m.id for m in messages
        ]


async def test_newer_schema_is_refused(db_url: str) -> None:
    async with open_backend(db_url) as backend:
        await backend.add_message("s", "user", "x")
    path = db_url.removeprefix("sqlite:///")
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE schema_info SET value = '999' WHERE key = 'version'")
    conn.close()
    with pytest.raises(ConfigurationError, match="999"):
        await open_backend(db_url).connect()


async def test_a_file_that_is_not_a_database_is_a_transport_error(tmp_path: Path) -> None:
    path = tmp_path / "garbage.db"
    path.write_bytes(b"this is not a sqlite database at all" * 100)
    with pytest.raises(TransportError) as raised:
        await open_backend(f"sqlite:///{path}").connect()
    assert not isinstance(raised.value, sqlite3.Error)


async def test_unopenable_path_is_a_transport_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("a file where a folder should be")
    with pytest.raises(TransportError):
        await open_backend(f"sqlite:///{blocker}/x.db").connect()  # a file as its folder
    with pytest.raises(TransportError):
        await open_backend(f"sqlite:///{tmp_path}").connect()  # a directory


async def test_locked_database_is_a_transport_error(db_url: str) -> None:
    async with open_backend(db_url, busy_timeout=0) as backend:
        await backend.add_message("s", "user", "x")
        holder = sqlite3.connect(db_url.removeprefix("sqlite:///"), isolation_level=None)
        try:
            holder.execute("BEGIN IMMEDIATE")
            with pytest.raises(TransportError, match="locked"):
                await backend.add_message("s", "user", "blocked")
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert len((await backend.get_conversation("s")).messages) == 1
        await backend.add_message("s", "user", "unblocked")


async def test_lifecycle(memory: MemoryBackend) -> None:
    await memory.connect()  # again: no-op
    backend = open_backend()
    await backend.add_message("s", "user", "lazy connect")
    await backend.close()
    await backend.close()
    with pytest.raises(TransportError):
        await backend.get_conversation("s")


async def test_limits_up_to_64_bits_are_accepted_and_larger_ones_refused(
    memory: MemoryBackend,
) -> None:
    with pytest.raises(InvalidRequestError) as info:
        await memory.get_conversation("s", limit=10**30)
    assert info.value.argument == "limit"
    huge = 2**63 - 1
    await memory.add_message("s", "user", "limitless")
    await memory.add_entity("Limitless", "concept")
    assert len((await memory.get_conversation("s", limit=huge)).messages) == 1
    assert len(await memory.list_conversations(limit=huge)) == 1
    assert len(await memory.list_sessions(limit=huge)) == 1
    assert await memory.list_sessions(limit=huge, offset=huge) == []
    assert len(await memory.search_messages("limitless", limit=huge)) == 1
    assert len(await memory.find_entities("limitless", huge)) == 1


async def test_a_broken_embedder_is_a_configuration_error() -> None:
    class Broken:
        dimensions = 2

        async def embed(self, texts: object) -> list[list[object]]:
            return [["not", "numbers"]]

    async with open_backend("memory://", embedder=Broken()) as backend:
        with pytest.raises(ConfigurationError, match="embedder"):
            await backend.add_message("s", "user", "x")
        assert (await backend.get_conversation("s")).messages == []


async def test_embedder_options(db_url: str) -> None:
    async with open_backend(db_url, embedder=HashingEmbedder(32)) as backend:
        message = await backend.add_message("s", "user", "vector")
    async with open_backend(db_url) as plain:  # no embedder: text search still works
        (hit,) = await plain.search_messages("vector")
        assert hit.embedding == message.embedding
