"""Entities read by id or by name or alias, updated, and merged (each write one
transaction, the entities it changes locked first, in id order).

An entity's aliases are stored as written in ``aliases`` (a JSON list: what a read
returns) and as lookup keys in ``alias_keys`` (each as :func:`.entities.name_key` makes a
name's key; GIN-indexed), written together here and by the importer.
"""

from __future__ import annotations

import json
from typing import Any

from psycopg import errors as pg_errors

from memory_core.store import ConflictError, Entity, NotFoundError
from memory_core.store import requests as rq

from . import words
from .codec import load_optional, load_text, store_metadata, store_optional, store_text
from .conversations import BACKEND, tenant_key
from .entities import name_key
from .rows import ENTITY_COLUMNS, to_entity
from .tx import Tx

Row = tuple[Any, ...]
# Row positions of ENTITY_COLUMNS.
_ID, _NAME, _TYPE, _DESCRIPTION = 0, 1, 2, 3


async def get(tx: Tx, req: rq.GetEntity) -> Entity | None:
    """The ``get_entity`` hook."""
    row = await _row(tx, tenant_key(req.tenant), req.entity_id, lock=False)
    return None if row is None else to_entity(row)


async def by_name(tx: Tx, req: rq.GetEntityByName) -> Entity | None:
    """The ``get_entity_by_name`` hook: a name before an alias, then the oldest."""
    key = name_key(req.name)
    sql = (
        f"SELECT {ENTITY_COLUMNS} FROM {{s}}.entities e WHERE e.tenant = %s "
        "AND (e.name_key = %s OR e.alias_keys @> ARRAY[%s]::text[])"
    )
    params: list[object] = [tenant_key(req.tenant), key, key]
    if req.type is not None:
        sql += " AND e.type = %s"
        params.append(req.type)
    sql += " ORDER BY (e.name_key = %s) DESC, e.created_at, e.id LIMIT 1"
    row = await tx.row(sql, [*params, key])
    return None if row is None else to_entity(row)


async def update(tx: Tx, req: rq.UpdateEntity, now: Any) -> Entity:
    """The ``update_entity`` hook."""
    tenant = tenant_key(req.tenant)
    row = await _row(tx, tenant, req.entity_id, lock=True)
    if row is None:
        raise NotFoundError.missing(BACKEND, "entity", req.entity_id, argument="entity_id")
    name = load_text(row[_NAME]) if req.name is None else req.name
    if req.name is not None:
        await _check_free(tx, tenant, row, name)
    description = load_optional(row[_DESCRIPTION]) if req.description is None else req.description
    aliases = _aliases(row) if req.aliases is None else req.aliases
    attributes = _attributes(row) if req.attributes is None else req.attributes
    try:
        return await _write(tx, row[_ID], name, description, aliases, attributes, now)
    except pg_errors.UniqueViolation:
        raise _conflict(row[_TYPE], None) from None


async def merge(tx: Tx, req: rq.MergeEntities, now: Any) -> Entity:
    """The ``merge_entities`` hook (see :meth:`memory_core.interface.Store.merge_entities`)."""
    tenant = tenant_key(req.tenant)
    found = {}
    for ident, argument in sorted(((req.source_id, "source_id"), (req.target_id, "target_id"))):
        row = await _row(tx, tenant, ident, lock=True)
        if row is None:
            raise NotFoundError.missing(BACKEND, "entity", ident, argument=argument)
        found[argument] = row
    source, target = found["source_id"], found["target_id"]
    await _move_links(tx, source[_ID], target[_ID])
    keys = [load_text(source[_NAME]), *_aliases(source)]
    await _rename_facts(tx, tenant, keys, load_text(target[_NAME]))
    aliases = [*_aliases(target), load_text(source[_NAME]), *_aliases(source)]
    description = load_optional(target[_DESCRIPTION]) or load_optional(source[_DESCRIPTION])
    attributes = {**_attributes(source), **_attributes(target)}
    await tx.run("DELETE FROM {s}.entities WHERE id = %s", (source[_ID],))
    name = load_text(target[_NAME])
    return await _write(tx, target[_ID], name, description, aliases, attributes, now)


async def _move_links(tx: Tx, source: str, target: str) -> None:
    """Mentions, relationships and preference links of ``source`` to ``target``, each
    once; what would repeat one the target has, or join the two, stays on the source and
    goes with it."""
    params = {"source": source, "target": target}
    await tx.run(
        "UPDATE {s}.mentions m SET entity_id = %(target)s WHERE m.entity_id = %(source)s "
        "AND NOT EXISTS (SELECT 1 FROM {s}.mentions o "
        "WHERE o.message_id = m.message_id AND o.entity_id = %(target)s)",
        params,
    )
    for moved, other in (("source_id", "target_id"), ("target_id", "source_id")):
        await tx.run(
            f"UPDATE {{s}}.relationships r SET {moved} = %(target)s "
            f"WHERE r.{moved} = %(source)s AND r.{other} NOT IN (%(source)s, %(target)s) "
            f"AND NOT EXISTS (SELECT 1 FROM {{s}}.relationships o WHERE o.{moved} = %(target)s "
            f"AND o.type = r.type AND o.{other} = r.{other})",
            params,
        )
    await tx.run(
        "UPDATE {s}.preference_entities p SET entity_id = %(target)s "
        "WHERE p.entity_id = %(source)s AND NOT EXISTS (SELECT 1 FROM {s}.preference_entities o "
        "WHERE o.preference_id = p.preference_id AND o.entity_id = %(target)s)",
        params,
    )


async def _rename_facts(tx: Tx, tenant: str, names: list[str], subject: str) -> None:
    """Facts of ``tenant`` whose subject is one of ``names`` ignoring case get ``subject``
    (and its words)."""
    keys = [name_key(name) for name in names]
    rows = await tx.rows(
        "SELECT id, predicate, object FROM {s}.facts WHERE tenant = %s AND subject_key = ANY(%s)",
        (tenant, keys),
    )
    for ident, predicate, obj in rows:
        await tx.run(
            "UPDATE {s}.facts SET subject = %s, subject_key = %s, words = %s::text[] WHERE id = %s",
            (
                store_text(subject),
                name_key(subject),
                words.of(subject, load_text(predicate), load_text(obj)),
                ident,
            ),
        )


async def _check_free(tx: Tx, tenant: str, row: Row, name: str) -> None:
    other = await tx.row(
        "SELECT id FROM {s}.entities WHERE tenant = %s AND name_key = %s AND type = %s "
        "AND id <> %s",
        (tenant, name_key(name), row[_TYPE], row[_ID]),
    )
    if other is not None:
        raise _conflict(row[_TYPE], other[0])


def _conflict(kind: str, other: str | None) -> ConflictError:
    which = "another entity" if other is None else f"entity {other}"
    return ConflictError(
        f"{which} of type {kind} already has this name; merge_entities joins the two",
        argument="name",
    )


async def _write(
    tx: Tx,
    ident: str,
    name: str,
    description: str | None,
    aliases: list[str],
    attributes: dict[str, Any],
    now: Any,
) -> Entity:
    """Store the entity's new state, its alias keys and words; the row as stored."""
    kept = _distinct(name, aliases)
    row = await tx.row(
        "UPDATE {s}.entities e SET name = %s, name_key = %s, description = %s, aliases = %s, "
        "alias_keys = %s::text[], attributes = %s, words = %s::text[], "
        f"updated_at = greatest(e.updated_at, %s) WHERE e.id = %s RETURNING {ENTITY_COLUMNS}",
        (
            store_text(name),
            name_key(name),
            store_optional(description),
            json.dumps(kept, ensure_ascii=False),
            [name_key(alias) for alias in kept],
            store_metadata(attributes)[0],
            words.of(name, description),
            now,
            ident,
        ),
    )
    assert row is not None  # locked by the caller
    return to_entity(row)


def extras(record: dict[str, Any]) -> tuple[str, list[str], str]:
    """An archive entity record's ``aliases`` (stored JSON, lookup keys) and
    ``attributes`` (stored JSON), absent ones empty: what the importer writes."""
    kept = _distinct(record["name"], list(record.get("aliases") or []))
    attributes = store_metadata(record.get("attributes") or {})[0]
    return json.dumps(kept, ensure_ascii=False), [name_key(a) for a in kept], attributes


def _distinct(name: str, aliases: list[str]) -> list[str]:
    """``aliases`` each once ignoring case, the first spelling kept, without ``name``."""
    found: dict[str, str] = {name.casefold(): name}
    for alias in aliases:
        found.setdefault(alias.casefold(), alias)
    return list(found.values())[1:]


def _aliases(row: Row) -> list[str]:
    return to_entity(row).aliases


def _attributes(row: Row) -> dict[str, Any]:
    return to_entity(row).attributes


async def _row(tx: Tx, tenant: str, entity_id: str, *, lock: bool) -> Row | None:
    if "\x00" in entity_id:
        return None  # no stored id holds a NUL
    sql = f"SELECT {ENTITY_COLUMNS} FROM {{s}}.entities e WHERE e.tenant = %s AND e.id = %s"
    return await tx.row(sql + (" FOR UPDATE" if lock else ""), (tenant, entity_id))
