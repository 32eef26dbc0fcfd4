"""The bulk transfer hook of the PostgreSQL backend (see :mod:`memory_core.transfer`).

Export reads in keyset pages (entities by id, sessions by name, both in byte order as
the embedded store sorts them, messages by ``seq``; the long-term records of
:mod:`.transfer_long_term` by id; traces, steps and tool calls as
:mod:`.transfer_traces` reads them), each page in its own short transaction: memory
stays bounded; it is not a snapshot of a store written meanwhile. Import writes each
batch of records in one transaction (:mod:`.transfer_import`, the reasoning records by
:mod:`.transfer_traces_import`), messages and mentions as multi-row inserts.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from memory_core.store import ALL_KINDS, ImportState, Message, Record, TransferReport, trusted
from memory_core.store import transfer_records as rec

from .rows import (
    CONVERSATION_COLUMNS,
    ENTITY_COLUMNS,
    MESSAGE_COLUMNS,
    checked_fields,
    to_conversation,
    to_entity,
)
from .transfer_import import Importer
from .transfer_long_term import BYTES, PAGE, conversation_scope, entity_in_scope, export_long_term
from .transfer_traces import export_traces
from .tx import Tx

# MESSAGE_COLUMNS, then seq and the (entity id, position) pairs of the message's mentions.
_MESSAGE_PAGE = (
    f"SELECT {MESSAGE_COLUMNS}, m.seq, "
    "(SELECT json_agg(json_build_array(x.entity_id, x.position) "
    f"ORDER BY x.position, x.entity_id {BYTES}) "
    "FROM {s}.mentions x WHERE x.message_id = m.id) "
    "FROM {s}.messages m JOIN {s}.conversations c ON c.id = m.conversation_id "
    "WHERE m.conversation_id = %s AND m.seq > %s ORDER BY m.seq LIMIT %s"
)


class PostgresTransfer:
    """Reads and writes archive records straight from and to the PostgreSQL tables.

    ``run`` is the store's: one transaction on a pooled connection, errors translated
    (and retried once on a connection found broken before COMMIT, so an import batch
    works on copies of the id maps and publishes them once committed)."""

    # Every record kind, traces, steps and tool calls too.
    kinds = ALL_KINDS

    def __init__(self, run: Callable[..., Awaitable[Any]], multi_tenant: bool) -> None:
        self._run = run
        self.multi_tenant = multi_tenant

    async def _read(self, sql: str, params: list[object]) -> list[tuple[Any, ...]]:
        async def work(tx: Tx) -> list[tuple[Any, ...]]:
            return await tx.rows(sql, params)

        rows: list[tuple[Any, ...]] = await self._run(work, write=False)
        return rows

    # ------------------------------------------------------------------ export

    async def export_records(
        self, users: list[str] | None, session_prefix: str | None, report: TransferReport
    ) -> AsyncIterator[Record]:
        """Every record in scope, per tenant: entities, then each conversation followed
        by its messages in ``seq`` order, each message followed by its mentions; then,
        without ``session_prefix``, the tenant's relationships, preferences and facts;
        then its traces in scope with their steps and tool calls."""
        only = None if self.multi_tenant else users
        for tenant in await self._tenants(users):
            async for record in self._entities(tenant, session_prefix, only):
                yield record
            async for record in self._conversations(tenant, session_prefix, only, report):
                yield record
            if not session_prefix:  # long-term records belong to no session
                async for record in export_long_term(self._read, tenant, tenant or None, only):
                    yield record
            async for record in export_traces(self._read, tenant, session_prefix, only):
                yield record

    async def _tenants(self, users: list[str] | None) -> list[str]:
        if not self.multi_tenant:
            return [""]
        if users is not None:
            return list(users)
        rows = await self._read(
            "SELECT t FROM (SELECT tenant FROM {s}.conversations WHERE tenant <> '' UNION "
            "SELECT tenant FROM {s}.entities WHERE tenant <> '' UNION "
            "SELECT tenant FROM {s}.preferences WHERE tenant <> '' UNION "
            "SELECT tenant FROM {s}.facts WHERE tenant <> '' UNION "
            "SELECT tenant FROM {s}.traces WHERE tenant <> '') AS found (t) "
            f"ORDER BY t {BYTES}",
            [],
        )
        return [r[0] for r in rows]

    async def _entities(
        self, tenant: str, prefix: str | None, users: list[str] | None
    ) -> AsyncIterator[Record]:
        """The tenant's entities in scope: all of them when the export is not narrowed
        to sessions (``prefix``) or users (``users``, single-tenant store: entities belong
        to no user there); otherwise those a message of a conversation in scope mentions,
        and (narrowed to users only) those their preferences link."""
        owner = tenant or None
        sql = (
            f"SELECT {ENTITY_COLUMNS} FROM {{s}}.entities e WHERE e.tenant = %s "
            f"AND e.id {BYTES} > %s"
        )
        scope: list[object] = []
        if prefix or users is not None:
            held, scope = entity_in_scope("e.id", tenant, prefix, users)
            sql += f" AND {held}"
        sql += f" ORDER BY e.id {BYTES} LIMIT %s"
        after = ""
        while True:
            rows = await self._read(sql, [tenant, after, *scope, PAGE])
            for row in rows:
                yield rec.entity(to_entity(row), owner)
            if len(rows) < PAGE:
                return
            after = rows[-1][0]

    async def _conversations(
        self, tenant: str, prefix: str | None, users: list[str] | None, report: TransferReport
    ) -> AsyncIterator[Record]:
        narrowed, scope = conversation_scope(prefix, users)
        sql = (
            f"SELECT {CONVERSATION_COLUMNS}, (SELECT count(*) FROM {{s}}.messages m "
            "WHERE m.conversation_id = c.id) FROM {s}.conversations c "
            f"WHERE c.tenant = %s AND c.session_id {BYTES} > %s{narrowed} "
            f"ORDER BY c.session_id {BYTES} LIMIT %s"
        )
        after: str | None = ""
        while after is not None:
            rows = await self._read(sql, [tenant, after, *scope, PAGE])
            after = rows[-1][1] if len(rows) == PAGE else None
            for row in rows:
                yield rec.conversation(to_conversation(row), row[7], False)
                async for record in self._messages(row[0], report):
                    yield record

    async def _messages(
        self, conversation_id: Any, report: TransferReport
    ) -> AsyncIterator[Record]:
        after = -(2**63)
        archive_id = str(conversation_id)
        while True:
            rows = await self._read(_MESSAGE_PAGE, [conversation_id, after, PAGE])
            for row in rows:
                fields = checked_fields(row, None)
                if fields is None:  # another program's, unreadable: see the warning
                    report.unreadable.append(
                        f"message {str(row[0])!r}: another program's, unreadable"
                    )
                    continue
                message = trusted(Message, fields)
                yield rec.message(message, archive_id, row[12])
                for entity_id, position in row[13] or ():
                    yield rec.mention(str(message.id), entity_id, position)
            if len(rows) < PAGE:
                return
            after = rows[-1][12]

    # ------------------------------------------------------------------ import

    async def import_records(self, records: list[Record], state: ImportState) -> None:
        """Write a batch in one transaction (see :class:`.transfer_import.Importer`)."""

        async def work(tx: Tx) -> Importer:
            importer = Importer(state, self.multi_tenant)
            await importer.run(tx, records)
            return importer

        done: Importer = await self._run(work, write=True)
        done.publish(state)
