"""The performance shape: one statement per add_message, one UNWIND statement per batch,
and an index-backed newest-N read whose cost depends on N, not on conversation length.

Statements are counted at the driver (every ``tx.run`` of a managed transaction and every
auto-commit ``session.run``), and transactions where they open (``execute_read``,
``execute_write``, ``execute_query``), independently of the backend's own code.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import neo4j
import pytest

from memory_core import EntityRef, MemoryBackend
from memory_core import requests as rq
from memory_core.backends.bolt import cypher
from memory_core.backends.bolt.records import session_params
from memory_core_dev.neo4j_fixtures import Neo4jHandle

pytestmark = [pytest.mark.anyio, pytest.mark.neo4j]
Unique = Callable[[str], str]


@dataclass
class Recorder:
    """What reached the driver: statements run, and transactions opened."""

    statements: list[str] = field(default_factory=list)
    transactions: list[str] = field(default_factory=list)

    def clear(self) -> None:
        self.statements.clear()
        self.transactions.clear()


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> Iterator[Recorder]:
    record = Recorder()
    tx_run = neo4j.AsyncManagedTransaction.run
    session_run = neo4j.AsyncSession.run
    execute_read = neo4j.AsyncSession.execute_read
    execute_write = neo4j.AsyncSession.execute_write

    async def run_in_tx(self: Any, query: Any, parameters: Any = None, **kw: Any) -> Any:
        record.statements.append(str(query))
        return await tx_run(self, query, parameters, **kw)

    async def run_auto(self: Any, query: Any, parameters: Any = None, **kw: Any) -> Any:
        record.statements.append(str(query))
        return await session_run(self, query, parameters, **kw)

    async def read(self: Any, work: Any, *args: Any, **kw: Any) -> Any:
        record.transactions.append("read")
        return await execute_read(self, work, *args, **kw)

    async def write(self: Any, work: Any, *args: Any, **kw: Any) -> Any:
        record.transactions.append("write")
        return await execute_write(self, work, *args, **kw)

    execute_query = neo4j.AsyncDriver.execute_query

    async def one_statement(self: Any, *args: Any, **kw: Any) -> Any:
        # A managed transaction too; the statement inside is counted by ``run_in_tx``.
        routing = kw.get("routing_", neo4j.RoutingControl.WRITE)
        record.transactions.append("read" if routing == neo4j.RoutingControl.READ else "write")
        return await execute_query(self, *args, **kw)

    monkeypatch.setattr(neo4j.AsyncDriver, "execute_query", one_statement)
    monkeypatch.setattr(neo4j.AsyncManagedTransaction, "run", run_in_tx)
    monkeypatch.setattr(neo4j.AsyncSession, "run", run_auto)
    monkeypatch.setattr(neo4j.AsyncSession, "execute_read", read)
    monkeypatch.setattr(neo4j.AsyncSession, "execute_write", write)
    yield record


async def test_add_message_is_one_statement_in_one_transaction(
    bolt: MemoryBackend, recorder: Recorder, unique: Unique
) -> None:
    session = unique("s")
    entity = await bolt.add_entity(unique("Ent"), "PERSON")
    recorder.clear()

    await bolt.add_message(session, "user", "first write creates the conversation")
    assert (len(recorder.statements), recorder.transactions) == (1, ["write"])

    recorder.clear()
    await bolt.add_message(
        session,
        "assistant",
        "everything at once",
        metadata={"k": [1, {"a": True}]},
        idempotency_key="key-1",
        user_identifier=unique("user"),
        extraction_mode="explicit",
        explicit_mentions=[
            EntityRef(id=entity.id),
            EntityRef(name=entity.name),
            EntityRef(name=unique("New"), type="ORGANIZATION"),
        ],
    )
    assert (len(recorder.statements), recorder.transactions) == (1, ["write"])

    recorder.clear()
    await bolt.add_message(session, "assistant", "replay", idempotency_key="key-1")
    assert (len(recorder.statements), recorder.transactions) == (1, ["write"])


async def test_multi_tenant_add_message_with_mentions_is_one_statement(
    tenant_bolt: MemoryBackend, recorder: Recorder, unique: Unique
) -> None:
    user = unique("user")
    entity = await tenant_bolt.add_entity(unique("Ent"), "PERSON", user_identifier=user)
    recorder.clear()
    stored = await tenant_bolt.add_message(
        unique("s"),
        "user",
        "per-tenant mentions",
        user_identifier=user,
        extraction_mode="explicit",
        explicit_mentions=[
            EntityRef(id=entity.id),
            EntityRef(name=entity.name),
            EntityRef(name=unique("New"), type="ORGANIZATION"),
        ],
    )
    assert (len(recorder.statements), recorder.transactions) == (1, ["write"])
    assert len(stored.mentions) == 2 and entity.id in [r.id for r in stored.mentions]


async def test_a_batch_call_is_one_unwind_statement(
    bolt: MemoryBackend, recorder: Recorder, unique: Unique
) -> None:
    """The whole call is one transaction (all or nothing), whatever ``batch_size`` is."""
    session = unique("s")
    await bolt.add_message(session, "user", "existing")
    recorder.clear()
    stored = await bolt.add_messages_batch(
        session, [{"role": "user", "content": f"b{i}"} for i in range(250)], batch_size=100
    )
    assert [m.content for m in stored] == [f"b{i}" for i in range(250)]
    assert recorder.transactions == ["write"]
    assert len(recorder.statements) == 1
    assert all("UNWIND range(0, size($messages) - 1)" in s for s in recorder.statements)


async def test_newest_n_read_is_index_backed(
    bolt: MemoryBackend, neo4j_server: Neo4jHandle, unique: Unique
) -> None:
    """PROFILE the read on 2,000 messages: the seq index is walked backwards and only N
    rows come out of it (a plan that scans the conversation fails this)."""
    session = unique("long")
    for _ in range(2):
        await bolt.add_messages_batch(
            session, [{"role": "user", "content": f"m{i}"} for i in range(1000)], batch_size=1000
        )
    params = {
        **session_params(rq.Target(session_id=session, conversation_id=None)),
        "limit": 7,
        "since": None,
    }
    async with neo4j.AsyncGraphDatabase.driver(neo4j_server.uri, auth=neo4j_server.auth) as d:
        result = await d.execute_query("PROFILE " + cypher.GET_CONVERSATION_SESSION, params)
    assert len(result.records[0]["messages"]) == 7
    assert result.summary.profile is not None
    operators = list(_operators(result.summary.profile))
    seeks = [op for op in operators if "(conversation_id, seq)" in op[1]]
    assert seeks, "the read does not use the Message(conversation_id, seq) index"
    assert all(rows <= 7 for rows, _ in seeks), f"the index seek produced {seeks} rows"
    assert max(rows for rows, _ in operators) <= 7, "some operator handled more than N rows"


def _operators(plan: dict[str, Any]) -> Iterator[tuple[int, str]]:
    details = str(plan.get("args", {}).get("Details", ""))
    yield int(plan.get("rows", 0)), f"{plan['operatorType']} {details}"
    for child in plan.get("children", []):
        yield from _operators(child)
