"""What PostgreSQL text cannot hold, and what one tsvector cannot hold (issue 48).

E5: a NUL in a title, an entity's name or description, an idempotency key, a metadata
filter, a ``find_entities`` identifier or a ``list_sessions`` prefix raised a
``StoreError`` (or, for a key, was refused on this backend only). E6: a metadata filter
missed a real match once 200 messages with NUL-bearing metadata ranked ahead of it.
E13: words past about 900 KB of a message's distinct words, or longer than 2,000 bytes,
were never found. Plus the migration that brings a version-1 store there.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import psycopg
import pytest

from memory_core import MemoryBackend, open_backend
from memory_core.backends.postgres import codec
from memory_core.backends.postgres.schema import _VERSIONS, MIGRATIONS
from memory_core.transfer import copy_memory
from memory_core_dev.nams_server import API_KEY, NamsTestServer
from memory_core_dev.postgres_server import PostgresHandle

pytestmark = pytest.mark.anyio

DECOYS = 250  # more than the candidate pool (200)


def _url(server: PostgresHandle, schema: str) -> str:
    separator = "&" if "?" in server.url else "?"
    return f"{server.url}{separator}schema={schema}"


@pytest.fixture
def schema() -> str:
    return f"t_{uuid.uuid4().hex[:12]}"


@pytest.fixture
async def store(postgres_server: PostgresHandle, schema: str) -> AsyncIterator[MemoryBackend]:
    async with open_backend(_url(postgres_server, schema)) as backend:
        yield backend


def _cyrillic_words(count: int) -> list[str]:
    """``count`` distinct four-letter Cyrillic words (8 bytes of UTF-8 each)."""
    letters = [chr(0x430 + i) for i in range(32)]
    return ["".join(letters[(n >> shift) & 31] for shift in (15, 10, 5, 0)) for n in range(count)]


# ------------------------------------------------------------------ the codec


@pytest.mark.parametrize(
    "text", ["", "plain", "\x00", "\x01", "\x010", "\x011", "a\x00\x01b\x01\x00", "\x00" * 3]
)
def test_escaped_text_reads_back_exactly_and_holds_no_nul(text: str) -> None:
    stored = codec.store_text(text)
    assert "\x00" not in stored
    assert codec.load_text(stored) == text


def test_escaping_keeps_different_strings_apart() -> None:
    texts = ["a\x00", "a\x010", "a\x01", "a\x011", "a\x0110", "a0", "a"]
    assert len({codec.store_text(t) for t in texts}) == len(texts)


def test_the_escaped_json_text_is_the_json_of_the_escaped_value() -> None:
    import json

    value = {"k\x00": ["\\u0000", "\x01", {"\\": "\\\x00\\"}], "plain": "x"}
    text = json.dumps(value, ensure_ascii=False)
    assert json.loads(codec.escaped_json(text)) == codec.store_json(value)


# ------------------------------------------------------------------ E5


async def test_nul_in_every_string_argument_is_stored_exactly(store: MemoryBackend) -> None:
    created = await store.create_conversation("s", title="a\x00b\x01")
    assert created.title == "a\x00b\x01"
    assert (await store.get_conversation("s")).title == "a\x00b\x01"
    [listed] = await store.list_sessions(prefix="s")
    assert listed.title == "a\x00b\x01"
    entity = await store.add_entity("Ada\x00Lovelace", "PERSON", description="one\x00two")
    assert (entity.name, entity.description) == ("Ada\x00Lovelace", "one\x00two")
    assert [e.id for e in await store.find_entities("ada\x00LOVELACE")] == [entity.id]
    assert await store.find_entities("adalovelace") == []
    again = await store.add_entity("ADA\x00lovelace", "PERSON")
    assert again.id == entity.id
    keyed = await store.add_message("s", "user", "hi", idempotency_key="k\x00")
    assert keyed.idempotency_key == "k\x00"
    replay = await store.add_message("s", "user", "other", idempotency_key="k\x00")
    assert replay.id == keyed.id
    other = await store.add_message("s", "user", "other", idempotency_key="k")
    assert other.id != keyed.id
    mentioned = await store.add_message(
        "s",
        "user",
        "met",
        extraction_mode="explicit",
        explicit_mentions=[{"name": "Ada\x00Lovelace", "type": "PERSON"}],
    )
    assert [m.name for m in mentioned.mentions] == ["Ada\x00Lovelace"]
    read = (await store.get_conversation("s")).messages
    assert [m.idempotency_key for m in read] == ["k\x00", "k", None]
    assert read[-1].mentions == mentioned.mentions
    assert await store.list_sessions(prefix="s\x00") == []
    assert await store.delete_entity("no\x00such") is False


async def test_metadata_filters_with_nul_match_exactly(store: MemoryBackend) -> None:
    wanted = {"k\x00": "v\x00", "nested": {"\x01": ["\x00", 1]}}
    hit = await store.add_message("s", "user", "kiwi", metadata=wanted)
    await store.add_message("s", "user", "kiwi", metadata={"k\x00": "v"})
    await store.add_message("s", "user", "kiwi", metadata={"k": "v\x00"})
    for filters in ({"k\x00": "v\x00"}, {"nested": {"\x01": ["\x00", 1]}}, wanted):
        found = await store.search_messages("kiwi", metadata_filters=filters)
        assert [m.id for m in found] == [hit.id], filters
    assert await store.search_messages("kiwi", metadata_filters={"k\x00": "v\x01"}) == []


# ------------------------------------------------------------------ E6


@pytest.mark.parametrize("wanted", ["plain", "with\x00nul"])
async def test_a_filter_finds_its_match_behind_more_decoys_than_the_pool(
    store: MemoryBackend, wanted: str
) -> None:
    """Before: NUL-bearing metadata passed the SQL filter, filled the candidate pool of
    200 and was dropped in Python, so the one real match was never looked at."""
    decoys = [
        {"role": "user", "content": "kiwi kiwi kiwi", "metadata": {"tag": "x\x00", "n": n}}
        for n in range(DECOYS)
    ]
    await store.add_messages_batch("s", decoys)
    hit = await store.add_message("s", "user", "kiwi at last", metadata={"tag": wanted})
    for session in ("s", None):
        found = await store.search_messages(
            "kiwi", session_id=session, metadata_filters={"tag": wanted}
        )
        assert [m.id for m in found] == [hit.id]


# ------------------------------------------------------------------ E13


async def test_every_word_of_a_message_past_one_tsvector_is_found(store: MemoryBackend) -> None:
    words = _cyrillic_words(200_000)  # 1.6 MB of distinct words, 1,000,000 characters
    content = " ".join(words)[: 1_000_000 - 13] + " zqlastword"
    assert len(content) <= 1_000_000
    message = await store.add_message("big", "user", content)
    batch = await store.add_messages_batch("big2", [{"role": "user", "content": content}])
    for term in ("zqlastword", words[150_000], words[0]):
        hits = await store.search_messages(term, limit=5)
        assert {m.id for m in hits} == {message.id, batch[0].id}, term


async def test_a_word_longer_than_a_lexeme_is_found(store: MemoryBackend) -> None:
    long_word = "x" * 2500 + "é" * 1000
    hit = await store.add_message("s", "user", f"before {long_word} after")
    await store.add_message("s", "user", "x" * 2500)
    assert [m.id for m in await store.search_messages(long_word)] == [hit.id]


async def test_the_extra_words_go_with_their_message(
    store: MemoryBackend, postgres_server: PostgresHandle, schema: str
) -> None:
    content = " ".join(_cyrillic_words(200_000))[:1_000_000]
    one = await store.add_message("a", "user", content)
    await store.add_message("b", "user", content, user_identifier="u")
    count = f"SELECT count(*) FROM {schema}.message_words"
    with psycopg.connect(postgres_server.url) as conn:
        assert conn.execute(count).fetchone() == (2,)
        assert await store.delete_message(one.id)
        assert conn.execute(count).fetchone() == (1,)
        await store.forget_user("u")
        assert conn.execute(count).fetchone() == (0,)


async def test_a_copy_indexes_every_word(store: MemoryBackend) -> None:
    content = " ".join(_cyrillic_words(200_000))[: 1_000_000 - 13] + " zqlastword"
    async with open_backend("memory://") as source:
        await source.add_message("s", "user", content)
        await copy_memory(source, store)
    [hit] = await store.search_messages("zqlastword")
    assert hit.content == content


# ------------------------------------------------------------------ migration


def _version_one(url: str, schema: str) -> None:
    """A store as version 1 left it, with what version 2 stores otherwise: raw U+0001 in
    a title, an entity name (two whose escaped keys would meet) and an idempotency key,
    NUL-bearing metadata without its JSONB copy, and another program's text that is not
    JSON."""
    ddl = MIGRATIONS[0][1].format(schema=schema)
    conversation, now = uuid.uuid4(), "2030-01-01T00:00:00Z"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(_VERSIONS.format(schema=schema).encode())
        conn.execute(ddl.encode())
        conn.execute(f"INSERT INTO {schema}.schema_migrations (version) VALUES (1)")
        conn.execute(
            f"INSERT INTO {schema}.conversations (id, tenant, session_id, title, created_at, "
            "updated_at, next_seq) VALUES (%s, '', 's', 'old\x01title', %s, %s, 4)",
            (conversation, now, now),
        )
        for name in ("Old\x01", "Old\x011"):
            conn.execute(
                f"INSERT INTO {schema}.entities (id, tenant, name, name_key, type, created_at, "
                "updated_at) VALUES (%s, '', %s, %s, 'PERSON', %s, %s)",
                (str(uuid.uuid4()), name, name.casefold(), now, now),
            )
        rows = [
            (1, "kiwi", '{"k": "v\\u0000", "\\\\u0000": "\\u0001"}', None, None),
            (2, "kiwi", "{not json", None, None),
            (3, "kiwi", '{"k": "other"}', '{"k": "other"}', "key\x01"),
        ]
        for seq, content, metadata, doc, key in rows:
            conn.execute(
                f"INSERT INTO {schema}.messages (id, conversation_id, seq, role, content, "
                "metadata, metadata_doc, created_at, idempotency_key, words) VALUES "
                "(%s, %s, %s, 'user', %s, %s, %s, %s, %s, array_to_tsvector(%s::text[]))",
                (uuid.uuid4(), conversation, seq, content, metadata, doc, now, key, [content]),
            )


async def test_version_one_stores_are_brought_to_version_two(
    postgres_server: PostgresHandle, schema: str
) -> None:
    _version_one(postgres_server.url, schema)
    with pytest.warns(Warning):  # another program's metadata that is not JSON
        async with open_backend(_url(postgres_server, schema)) as store:
            assert (await store.get_conversation("s")).title == "old\x01title"
            names = {e.name for e in await store.find_entities("old\x01", limit=5)}
            assert names == {"Old\x01"}
            assert {e.name for e in await store.find_entities("OLD\x011")} == {"Old\x011"}
            legacy = {"k": "v\x00", "\\u0000": "\x01"}
            [hit] = await store.search_messages("kiwi", metadata_filters={"k": "v\x00"})
            assert hit.metadata == legacy
            [hit] = await store.search_messages("kiwi", metadata_filters={"\\u0000": "\x01"})
            assert hit.metadata == legacy
            replay = await store.add_message("s", "user", "new", idempotency_key="key\x01")
            assert replay.content == "kiwi"
            read = await store.get_conversation("s")
            assert [m.idempotency_key for m in read.messages] == [None, None, "key\x01"]


async def test_the_server_over_postgres_answers_entity_routes_with_nul(
    postgres_server: PostgresHandle, schema: str
) -> None:
    """Before: the entity routes answered 503 (a StoreError), which the NAMS client took
    for an outage and retried."""
    with NamsTestServer(_url(postgres_server, schema)) as server:
        options = {
            "api_key": API_KEY,
            "workspace_id": NamsTestServer.workspace("nul"),
            "trust_env": False,
        }
        async with open_backend(server.url, **options) as client:
            made = await client.add_entity("Nul\x00Corp", "ORGANIZATION", description="a\x00b")
            assert (made.name, made.description) == ("Nul\x00Corp", "a\x00b")
            [found] = await client.find_entities("nul\x00corp")
            assert found.id == made.id
            assert await client.find_entities("no\x00such") == []
