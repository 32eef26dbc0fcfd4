"""Data another program wrote, for the tests that must hold on a shared store.

* :data:`BOLT_ADVERSARIAL` / :func:`add_bolt_adversarial`: conversations and messages in
  the graph with values memory-core's models cannot hold (ids that are not UUIDs, times
  outside Python's range, unknown roles, content that is not text, metadata that is not
  a JSON object), in no user's scope, so every whole-store read meets them.
* :func:`add_postgres_adversarial`: the same kinds of values written by plain SQL into a
  memory-core PostgreSQL schema.
* :func:`add_reference_writes`: conversations the reference library (neo4j-agent-memory
  0.8.0, the ``dev`` extra) writes through its own short-term memory API.

Every record carries ``tag`` (a property ``foreign_tag`` in the graph, a session name
prefix in PostgreSQL) so that :func:`remove_bolt` can take it away again.

``python -m memory_core_dev.foreign_data URI`` fills a Neo4j with all of it, and other
programs' labels besides (``NEO4J_USERNAME`` / ``NEO4J_PASSWORD`` log in): what the
external-Neo4j CI job runs the whole suite against (``scripts/test_external_neo4j``).
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from uuid import uuid4

import anyio

Auth = tuple[str, str] | None

# Parameters: $tag, and $ids: a list of fresh UUID strings (as many as the statement uses).
BOLT_ADVERSARIAL = """
CREATE (:Conversation {id: 'legacy-' + $tag, session_id: 'foreign-' + $tag + '-legacy',
        title: 'an id that is not a UUID', created_at: datetime(), updated_at: datetime(),
        foreign_tag: $tag})
CREATE (odd:Conversation {id: $ids[0], session_id: 'foreign-' + $tag + '-odd',
        title: 'times out of range, metadata not an object',
        created_at: datetime('-0044-03-15T12:00:00Z'),
        updated_at: datetime('+20000-01-01T00:00:00Z'), metadata: '[1, 2]', foreign_tag: $tag})
CREATE (:Conversation {id: $ids[1], session_id: 42, created_at: datetime(),
        updated_at: 'yesterday', foreign_tag: $tag})
CREATE (odd)-[:HAS_MESSAGE]->(:Message {id: 'not-a-uuid-' + $tag, role: 'user',
        content: 'an id that is not a UUID', timestamp: datetime(), foreign_tag: $tag})
CREATE (odd)-[:HAS_MESSAGE]->(:Message {id: $ids[2], role: 'narrator', content: 'narrated',
        timestamp: datetime(), foreign_tag: $tag})
CREATE (odd)-[:HAS_MESSAGE]->(:Message {id: $ids[3], role: 'user', content: ['a', 'list'],
        metadata: '{not json', timestamp: datetime('+10000-01-01T00:00:00Z'), foreign_tag: $tag})
CREATE (odd)-[:HAS_MESSAGE]->(:Message {id: $ids[4], role: 'ASSISTANT', content: 42,
        timestamp: datetime('-0001-01-01T00:00:00Z'), foreign_tag: $tag})
CREATE (:Document {id: $ids[5], text: 'another program entirely', foreign_tag: $tag})
"""
BOLT_IDS = 6

REMOVE_BOLT = "MATCH (n {foreign_tag: $tag}) DETACH DELETE n"


def bolt_query(uri: str, auth: Auth, statement: str, **params: Any) -> None:
    """Run one statement on a Neo4j (auth ``None``: the server has none)."""
    from neo4j import GraphDatabase

    with GraphDatabase.driver(uri, auth=auth) as driver:
        driver.execute_query(statement, params)


def add_bolt_adversarial(uri: str, auth: Auth, tag: str) -> None:
    """The adversarial records of :data:`BOLT_ADVERSARIAL`, tagged ``tag``."""
    ids = [str(uuid4()) for _ in range(BOLT_IDS)]
    bolt_query(uri, auth, BOLT_ADVERSARIAL, tag=tag, ids=ids)


def remove_bolt(uri: str, auth: Auth, tag: str) -> None:
    """Every node tagged ``tag``, with its relationships."""
    bolt_query(uri, auth, REMOVE_BOLT, tag=tag)


POSTGRES_ADVERSARIAL = """
INSERT INTO {s}.conversations (id, tenant, session_id, title, metadata, created_at, updated_at)
VALUES (%(a)s, '', 'foreign-' || %(tag)s || '-odd', 'times out of range', '[1, 2]',
        '0044-03-15 12:00:00+00 BC', 'infinity'),
       (%(b)s, '', 'foreign-' || %(tag)s || '-late', NULL, 'not json',
        '-infinity', '20000-01-01 00:00:00+00');
INSERT INTO {s}.messages (id, conversation_id, seq, role, content, content_exact, metadata,
        created_at, words)
VALUES (%(m1)s, %(a)s, 1, 'narrator', 'narrated', NULL, '{}', now(), ''),
       (%(m2)s, %(a)s, 2, 'user', 'bytes', '\\xff00'::bytea, '[1]', '-infinity', ''),
       (%(m3)s, %(a)s, 3, 'assistant', 'late', NULL, '{x', '30000-01-01 00:00:00+00', '');
"""


def add_postgres_adversarial(url: str, schema: str, tag: str) -> None:
    """The adversarial rows, in the (migrated) memory-core ``schema`` at ``url``; their
    sessions are named ``foreign-{tag}-…`` and belong to no tenant."""
    import psycopg

    names = ("a", "b", "m1", "m2", "m3")
    params: dict[str, Any] = {name: uuid4() for name in names} | {"tag": tag}
    with psycopg.connect(url) as conn:
        for statement in POSTGRES_ADVERSARIAL.replace("{s}", schema).split(";\n"):
            if statement.strip():
                conn.execute(statement, params)


@asynccontextmanager
async def reference_client(uri: str, auth: Auth) -> AsyncIterator[Any]:
    """A connected ``Neo4jClient`` of the reference library (neo4j-agent-memory, the
    ``bench`` extra) on ``uri``, its constraints and indexes set up; closed on exit. Wrap
    it in the reference's memory class a test reads with (``ShortTermMemory(client)``…)."""
    from pydantic import SecretStr

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the reference warns about neo4j preview features
        from neo4j_agent_memory.config.settings import Neo4jConfig
        from neo4j_agent_memory.graph.client import Neo4jClient
        from neo4j_agent_memory.graph.schema import SchemaManager

    user, password = auth or ("neo4j", "unused-auth-is-off")
    client = Neo4jClient(Neo4jConfig(uri=uri, username=user, password=SecretStr(password)))
    await client.connect()
    try:
        schema = SchemaManager(client)
        await schema.setup_constraints()
        await schema.setup_indexes()
        yield client
    finally:
        await client.close()


async def add_reference_writes(uri: str, auth: Auth, tag: str, sessions: int = 3) -> None:
    """Conversations written by the reference library's own API (no embedder, no
    extraction), sessions ``reference-{tag}-{n}``, several messages each."""
    from neo4j_agent_memory.memory.short_term import ShortTermMemory

    async with reference_client(uri, auth) as client:
        memory = ShortTermMemory(client)
        for n in range(sessions):
            session = f"reference-{tag}-{n}"
            await memory.add_message(session, "user", f"reference note {n}", metadata={"n": n})
            await memory.add_message(session, "assistant", "noted")
            await memory.add_messages_batch(
                session,
                [{"role": "user", "content": "batched"}, {"role": "system", "content": "ok"}],
                generate_embeddings=False,
            )


def _auth_from_env() -> Auth:
    user, password = os.environ.get("NEO4J_USERNAME"), os.environ.get("NEO4J_PASSWORD")
    return (user, password) if user and password is not None else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m memory_core_dev.foreign_data",
        description="Fill a Neo4j with other programs' data: the reference library's writes "
        "and records with values memory-core's models cannot hold.",
    )
    parser.add_argument("uri", help="bolt://127.0.0.1:PORT (NEO4J_USERNAME/_PASSWORD log in)")
    parser.add_argument("--tag", default=f"prefill-{uuid4().hex[:8]}")
    args = parser.parse_args(argv)
    auth = _auth_from_env()
    anyio.run(add_reference_writes, args.uri, auth, args.tag)
    add_bolt_adversarial(args.uri, auth, args.tag)
    print(f"foreign data written to {args.uri} (tag {args.tag})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
