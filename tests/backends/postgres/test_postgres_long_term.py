"""Long-term memory on PostgreSQL beyond the conformance suite (issue 50): the upgrade of a
version 2 store, the words index (every word of the longest record, entities without
words indexed on connect), strings PostgreSQL text cannot hold, vector hits on both
paths (pgvector in SQL and the Python fallback) scored as the embedded store scores
them, tenancy of relationships, links that go with their entity, and a replayed add."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime

import psycopg
import pytest

from memory_core import MemoryBackend, NotFoundError, open_backend
from memory_core.backends.postgres import facts, preferences
from memory_core.backends.postgres.codec import store_text
from memory_core.backends.postgres.schema import _VERSIONS, LATEST, MIGRATIONS
from memory_core.backends.postgres.tx import Tx
from memory_core.requests import AddFact, AddPreference, Scope
from memory_core.scoring import TOLERANCE
from memory_core_dev.postgres_server import PostgresHandle

pytestmark = pytest.mark.anyio

# Every character the codec escapes, beside the ones it keeps.
ODD = "a\x00b \x01 \x010 \x011 naïve 🦊 'q\" \\ %_"


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


def _ids(records: Sequence[object]) -> list[str]:
    return [getattr(r, "id") for r in records]  # noqa: B009


# ------------------------------------------------------------------ the schema


def _version_two(url: str, schema: str) -> str:
    """A store as version 2 left it, with one entity (its name escaped as version 2
    stores it); the entity's id."""
    entity = str(uuid.uuid4())
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(_VERSIONS.format(schema=schema).encode())
        for version, ddl in MIGRATIONS[:2]:
            conn.execute(ddl.format(schema=schema).encode())
            conn.execute(f"INSERT INTO {schema}.schema_migrations (version) VALUES ({version})")
        conn.execute(
            f"INSERT INTO {schema}.entities (id, tenant, name, name_key, type, description, "
            "created_at, updated_at) VALUES (%s, '', %s, %s, 'PERSON', %s, now(), now())",
            (entity, store_text("Ada\x00Lovelace"), store_text("ada\x00lovelace"), "engines"),
        )
    return entity


async def test_a_version_2_store_gains_long_term_memory_and_its_entities_are_searchable(
    postgres_server: PostgresHandle, schema: str
) -> None:
    entity = _version_two(postgres_server.url, schema)
    async with open_backend(_url(postgres_server, schema)) as store:
        [found] = await store.search_entities("lovelace engines")
        assert (found.id, found.name) == (entity, "Ada\x00Lovelace")
        made = await store.add_preference("food", "likes figs", linked_entities=[entity])
        assert [p.linked_entities for p in await store.list_preferences()] == [[entity]]
        assert _ids(await store.search_preferences("figs")) == [made.id]
        kept = await store.get_entity(entity)
        assert kept is not None and (kept.aliases, kept.attributes) == ([], {})
        await store.update_entity(entity, aliases=["Countess"], attributes={"born": 1815})
        named = await store.get_entity_by_name("COUNTESS")
        assert named is not None and (named.id, named.attributes) == (entity, {"born": 1815})
    with psycopg.connect(postgres_server.url) as conn:
        versions = conn.execute(f"SELECT version FROM {schema}.schema_migrations").fetchall()
    assert [v[0] for v in versions] == list(range(1, LATEST + 1)) == [1, 2, 3]


async def test_entities_another_program_wrote_without_words_are_indexed_on_connect(
    postgres_server: PostgresHandle, schema: str
) -> None:
    url = _url(postgres_server, schema)
    async with open_backend(url) as store:
        ours = await store.add_entity("Grace", "PERSON", description="wrote compilers")
    with psycopg.connect(postgres_server.url, autocommit=True) as conn:
        conn.execute(
            f"INSERT INTO {schema}.entities (id, tenant, name, name_key, type, created_at, "
            "updated_at) VALUES ('theirs', '', 'Compilers Inc', 'compilers inc', "
            "'ORGANIZATION', now(), now())"
        )
        conn.execute(f"UPDATE {schema}.entities SET words = NULL WHERE id = %s", (ours.id,))
    async with open_backend(url) as store:
        assert set(_ids(await store.search_entities("compilers"))) == {ours.id, "theirs"}


async def test_every_word_of_a_long_preference_is_found(store: MemoryBackend) -> None:
    """More distinct words than one tsvector holds (1 MB), and a word longer than an
    index entry holds."""
    letters = [chr(0x430 + i) for i in range(32)]
    many = ["".join(letters[(n >> s) & 31] for s in (15, 10, 5, 0)) for n in range(150_000)]
    long_word = "\u0436" * 3000  # 6,000 bytes: more than a GIN index entry holds
    text = " ".join(many) + f" {long_word} zqlastword"
    made = await store.add_preference("reading", text)
    for query in ("zqlastword", long_word, many[-1]):
        assert _ids(await store.search_preferences(query)) == [made.id], query[:20]


# ------------------------------------------------------------------ strings


async def test_every_string_round_trips_with_nul_and_the_escape_character(
    store: MemoryBackend,
) -> None:
    entity = await store.add_entity(f"Ent {ODD}", "PERSON", description=f"desc {ODD}")
    meta = {f"k{ODD}": [ODD, {"n": ODD}]}
    pref = await store.add_preference(
        f"cat{ODD}", f"likes {ODD}", context=f"ctx {ODD}", metadata=meta, user_identifier="u"
    )
    fact = await store.add_fact(
        f"Subj{ODD}", f"PRED{ODD}", f"obj {ODD}", metadata=meta, user_identifier="u"
    )
    rel = await store.add_relationship(entity.id, entity.id, "SELF", properties=meta)
    [listed] = await store.list_preferences(f"cat{ODD}", user_identifier="u")
    [searched] = await store.search_preferences("naïve", user_identifier="u")
    for got in (pref, listed, searched):
        assert (got.category, got.preference, got.context, got.metadata) == (
            f"cat{ODD}",
            f"likes {ODD}",
            f"ctx {ODD}",
            meta,
        )
    [about] = await store.facts_about(f"SUBJ{ODD}", predicate=f"PRED{ODD}", user_identifier="u")
    [by_words] = await store.search_facts("obj", user_identifier="u")
    for got_fact in (fact, about, by_words):
        assert got_fact.as_triple == (f"Subj{ODD}", f"PRED{ODD}", f"obj {ODD}")
        assert got_fact.metadata == meta
    [listed_rel] = await store.list_relationships(entity.id)
    assert listed_rel.properties == meta == rel.properties
    [hit] = await store.search_entities("desc")
    assert (hit.name, hit.description) == (f"Ent {ODD}", f"desc {ODD}")


# ------------------------------------------------------------------ vectors


class _Meanings:
    """Vectors by the first known word of a text (orthogonal to every other meaning
    otherwise): texts that share no word can still be close."""

    def __init__(self, dimensions: int = 3) -> None:
        self.dimensions = dimensions
        base = {"pizza": [1.0, 0.0, 0.0], "italian": [0.9, 0.2, 0.0], "jazz": [0.0, 0.0, 1.0]}
        self.known = {word: vector[:dimensions] for word, vector in base.items()}

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._one(text) for text in texts]

    def _one(self, text: str) -> list[float]:
        for word in text.lower().split():
            if word in self.known:
                return self.known[word]
        return [0.0, 1.0, 0.0][: self.dimensions]


async def _vector_hits(backend: MemoryBackend) -> dict[str, float]:
    await backend.add_preference("food", "likes pizza")
    await backend.add_preference("music", "plays jazz")
    await backend.add_fact("Ada", "EATS", "pizza")
    found = await backend.search_preferences("italian")
    facts = await backend.search_facts("italian")
    return {h.preference: h.score or 0.0 for h in found} | {h.object: h.score or 0.0 for h in facts}


async def test_vector_hits_score_alike_on_pgvector_the_fallback_and_sqlite(
    pgvector_server: PostgresHandle, postgres_server: PostgresHandle
) -> None:
    schemas = {server: f"t_{uuid.uuid4().hex[:12]}" for server in ("vec", "plain")}
    vec = open_backend(_url(pgvector_server, schemas["vec"]), embedder=_Meanings())
    plain = open_backend(_url(postgres_server, schemas["plain"]), embedder=_Meanings())
    reference = open_backend("memory://", embedder=_Meanings())
    async with vec, plain, reference:
        engines = (vec.store.vector_engine, plain.store.vector_engine)  # type: ignore[attr-defined]
        assert engines == ("pgvector", "python")
        expected = await _vector_hits(reference)
        assert set(expected) == {"likes pizza", "pizza"}, "no shared word: found by vector"
        for backend in (vec, plain):
            got = await _vector_hits(backend)
            assert set(got) == set(expected)
            assert all(abs(got[k] - expected[k]) <= TOLERANCE for k in expected)


async def test_vectors_of_another_model_are_skipped_on_both_paths(
    pgvector_server: PostgresHandle, postgres_server: PostgresHandle
) -> None:
    for server in (pgvector_server, postgres_server):
        url = _url(server, f"t_{uuid.uuid4().hex[:12]}")
        async with open_backend(url, embedder=_Meanings(3)) as old:
            await old.add_preference("food", "likes pizza from before")
        async with open_backend(url, embedder=_Meanings(2)) as new:
            made = await new.add_preference("food", "likes pizza now")
            assert _ids(await new.search_preferences("italian")) == [made.id]


# ------------------------------------------------------------------ scope and links


async def test_relationships_never_cross_tenants(postgres_server: PostgresHandle) -> None:
    url = _url(postgres_server, f"t_{uuid.uuid4().hex[:12]}")
    async with open_backend(url, multi_tenant=True) as store:
        alice = await store.add_entity("Alice", "PERSON", user_identifier="alice")
        friend = await store.add_entity("Friend", "PERSON", user_identifier="alice")
        bob = await store.add_entity("Bob", "PERSON", user_identifier="bob")
        made = await store.add_relationship(alice.id, friend.id, "KNOWS", user_identifier="alice")
        with pytest.raises(NotFoundError) as info:
            await store.add_relationship(bob.id, alice.id, "KNOWS", user_identifier="bob")
        assert info.value.argument == "target_id"
        for call in (store.related_entities, store.list_relationships):
            with pytest.raises(NotFoundError):
                await call(alice.id, user_identifier="bob")
        assert await store.delete_relationship(made.id, user_identifier="bob") is False
        related = await store.related_entities(alice.id, user_identifier="alice")
        assert _ids(related) == [friend.id]


async def test_deleting_an_entity_removes_it_from_the_preferences_that_link_it(
    store: MemoryBackend,
) -> None:
    first = await store.add_entity("First", "PERSON")
    second = await store.add_entity("Second", "PERSON")
    made = await store.add_preference("people", "likes both", linked_entities=[first.id, second.id])
    assert made.linked_entities == [first.id, second.id]
    assert await store.delete_entity(first.id) is True
    [read] = await store.list_preferences()
    assert read.linked_entities == [second.id]


async def test_a_replayed_add_returns_what_its_first_attempt_wrote(
    postgres_server: PostgresHandle, schema: str, store: MemoryBackend
) -> None:
    """What ``_run`` does after a connection lost during the statement of an add (one
    statement outside a transaction block): the same add with the same id once more."""
    scope = Scope(user_identifier="u")
    liking = AddPreference(
        category="food",
        preference="likes figs",
        context=None,
        confidence=0.5,
        linked_entities=[],
        metadata={"n": 1},
        embedding=None,
        scope=scope,
    )
    knowing = AddFact(
        subject="Ada",
        predicate="KNOWS",
        object="figs",
        confidence=1.0,
        valid_from=None,
        valid_until=None,
        source_message_id=None,
        metadata={},
        embedding=[0.5, 0.5],
        scope=scope,
    )
    ident, now = str(uuid.uuid4()), datetime.now(UTC)
    async with await psycopg.AsyncConnection.connect(postgres_server.url, autocommit=True) as c:
        tx = Tx(c.cursor(), schema)
        added = [await preferences.add(tx, liking, ident, now) for _ in range(2)]
        stated = [await facts.add(tx, knowing, ident, now) for _ in range(2)]
    assert added[0] == added[1] and stated[0] == stated[1]
    assert _ids(await store.list_preferences()) == [ident]
    assert _ids(await store.facts_about("ada")) == [ident]
