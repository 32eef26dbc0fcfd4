"""Entities read by id or by name or alias, updated, and merged.

An entity's aliases are stored twice: as written, in the JSON list ``entities.aliases``
(what a read returns), and folded (``str.casefold``, as names are) in ``entity_aliases``,
the index a lookup by name reads. Both are written together, here and by the importer.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from memory_core.store import ConflictError, Entity, NotFoundError
from memory_core.store import requests as rq

from . import words
from .codec import dump_json, load_json, now_micros
from .conversations import tenant_key
from .rows import to_entity

# A name (rank 0) before an alias (rank 1), then the oldest.
_BY_NAME = (
    "SELECT e.*, 0 AS rank FROM entities e WHERE e.tenant = ? AND e.name_key = ? {typed} "
    "UNION ALL SELECT e.*, 1 AS rank FROM entity_aliases a JOIN entities e ON e.id = a.entity_id "
    "WHERE a.tenant = ? AND a.alias_key = ? {typed} "
    "ORDER BY rank, created_at, id LIMIT ?"
)


def get(conn: sqlite3.Connection, req: rq.GetEntity) -> Entity | None:
    """The ``get_entity`` hook."""
    row = _row(conn, tenant_key(req.tenant), req.entity_id)
    return None if row is None else to_entity(row)


def by_name(conn: sqlite3.Connection, req: rq.GetEntityByName) -> Entity | None:
    """The ``get_entity_by_name`` hook."""
    rows = named(conn, tenant_key(req.tenant), req.name, req.type, 1)
    return to_entity(rows[0]) if rows else None


def named(
    conn: sqlite3.Connection, tenant: str, name: str, kind: str | None, limit: int
) -> list[sqlite3.Row]:
    """Entities of ``tenant`` named ``name`` or known by it as an alias, ignoring case;
    names first, then the oldest; each once."""
    typed = "" if kind is None else "AND e.type = ?"
    key = name.casefold()
    typed_params: list[object] = [] if kind is None else [kind]
    params: list[object] = [tenant, key, *typed_params, tenant, key, *typed_params]
    rows = conn.execute(_BY_NAME.format(typed=typed), [*params, limit * 2]).fetchall()
    seen: set[str] = set()
    found = []
    for row in rows:
        if row["id"] not in seen:
            seen.add(row["id"])
            found.append(row)
    return found[:limit]


def update(conn: sqlite3.Connection, req: rq.UpdateEntity) -> Entity:
    """The ``update_entity`` hook."""
    tenant = tenant_key(req.tenant)
    row = _row(conn, tenant, req.entity_id)
    if row is None:
        raise NotFoundError.missing("embedded", "entity", req.entity_id, argument="entity_id")
    name = row["name"] if req.name is None else req.name
    if req.name is not None:
        _check_free(conn, tenant, row, name)
    description = row["description"] if req.description is None else req.description
    given = _aliases(row) if req.aliases is None else req.aliases
    attributes = load_json(row["attributes"]) if req.attributes is None else req.attributes
    _write(conn, row, name, description, given, attributes, now_micros())
    return _reread(conn, tenant, req.entity_id)


def merge(conn: sqlite3.Connection, req: rq.MergeEntities) -> Entity:
    """The ``merge_entities`` hook (see :meth:`memory_core.interface.Store.merge_entities`)."""
    tenant = tenant_key(req.tenant)
    source = _row(conn, tenant, req.source_id)
    if source is None:
        raise NotFoundError.missing("embedded", "entity", req.source_id, argument="source_id")
    target = _row(conn, tenant, req.target_id)
    if target is None:
        raise NotFoundError.missing("embedded", "entity", req.target_id, argument="target_id")
    _move_links(conn, source["id"], target["id"])
    keys = [source["name_key"], *(alias.casefold() for alias in _aliases(source))]
    _rename_facts(conn, tenant, keys, target["name"])
    aliases = [*_aliases(target), source["name"], *_aliases(source)]
    description = target["description"] or source["description"]
    attributes = {**load_json(source["attributes"]), **load_json(target["attributes"])}
    conn.execute("DELETE FROM entities WHERE id = ?", (source["id"],))
    _write(conn, target, target["name"], description, aliases, attributes, now_micros())
    return _reread(conn, tenant, target["id"])


def _move_links(conn: sqlite3.Connection, source: str, target: str) -> None:
    """Mentions, relationships and preference links of ``source`` to ``target``, each
    once; what would repeat one the target has, or join the two, stays on the source and
    goes with it."""
    conn.execute(
        "UPDATE OR IGNORE mentions SET entity_id = ? WHERE entity_id = ?", (target, source)
    )
    conn.execute(
        "UPDATE OR IGNORE relationships SET source_id = ? "
        "WHERE source_id = ? AND target_id NOT IN (?, ?)",
        (target, source, source, target),
    )
    conn.execute(
        "UPDATE OR IGNORE relationships SET target_id = ? "
        "WHERE target_id = ? AND source_id NOT IN (?, ?)",
        (target, source, source, target),
    )
    conn.execute(
        "UPDATE OR IGNORE preference_entities SET entity_id = ? WHERE entity_id = ?",
        (target, source),
    )


def _rename_facts(conn: sqlite3.Connection, tenant: str, keys: list[str], name: str) -> None:
    """Facts of ``tenant`` whose subject folds to one of ``keys`` get ``name`` as subject
    (and its words)."""
    marks = ",".join("?" * len(keys))
    rows = conn.execute(
        f"SELECT id, predicate, object FROM facts WHERE tenant = ? AND subject_key IN ({marks})",
        [tenant, *keys],
    ).fetchall()
    for row in rows:
        conn.execute(
            "UPDATE facts SET subject = ?, subject_key = ? WHERE id = ?",
            (name, name.casefold(), row["id"]),
        )
        conn.execute("DELETE FROM long_term_words WHERE record_id = ?", (row["id"],))
        words.index(conn, words.FACT, tenant, row["id"], (name, row["predicate"], row["object"]))


def _check_free(conn: sqlite3.Connection, tenant: str, row: sqlite3.Row, name: str) -> None:
    other = conn.execute(
        "SELECT id FROM entities WHERE tenant = ? AND name_key = ? AND type = ? AND id != ?",
        (tenant, name.casefold(), row["type"], row["id"]),
    ).fetchone()
    if other is not None:
        raise ConflictError(
            f"entity {other['id']} of type {row['type']} already has this name; "
            "merge_entities joins the two",
            argument="name",
        )


def _write(
    conn: sqlite3.Connection,
    row: sqlite3.Row,
    name: str,
    description: str | None,
    aliases: list[str],
    attributes: dict[str, Any],
    now: int,
) -> None:
    """Store the entity's new state and refresh its alias keys and words."""
    kept = _distinct(name, aliases)
    conn.execute(
        "UPDATE entities SET name = ?, name_key = ?, description = ?, aliases = ?, "
        "attributes = ?, updated_at = MAX(updated_at, ?) WHERE id = ?",
        (
            name,
            name.casefold(),
            description,
            json.dumps(kept, ensure_ascii=False),
            dump_json(attributes),
            now,
            row["id"],
        ),
    )
    index_aliases(conn, row["tenant"], row["id"], kept)
    if (name, description) != (row["name"], row["description"]):
        conn.execute("DELETE FROM long_term_words WHERE record_id = ?", (row["id"],))
        words.index(conn, words.ENTITY, row["tenant"], row["id"], (name, description))


def put_extras(
    conn: sqlite3.Connection, tenant: str, entity_id: str, name: str, record: dict[str, Any]
) -> None:
    """Store an archive entity record's ``aliases`` and ``attributes`` (absent: empty) on
    the entity ``entity_id`` just written, with their alias keys (the importer's)."""
    kept = _distinct(name, list(record.get("aliases") or []))
    conn.execute(
        "UPDATE entities SET aliases = ?, attributes = ? WHERE id = ?",
        (
            json.dumps(kept, ensure_ascii=False),
            dump_json(record.get("attributes") or {}),
            entity_id,
        ),
    )
    index_aliases(conn, tenant, entity_id, kept)


def index_aliases(
    conn: sqlite3.Connection, tenant: str, entity_id: str, aliases: list[str]
) -> None:
    """Make ``entity_aliases`` hold exactly the keys of ``aliases`` for the entity."""
    conn.execute("DELETE FROM entity_aliases WHERE entity_id = ?", (entity_id,))
    conn.executemany(
        "INSERT OR IGNORE INTO entity_aliases (entity_id, tenant, alias_key) VALUES (?, ?, ?)",
        [(entity_id, tenant, alias.casefold()) for alias in aliases],
    )


def _distinct(name: str, aliases: list[str]) -> list[str]:
    """``aliases`` each once ignoring case, the first spelling kept, without ``name``."""
    found: dict[str, str] = {name.casefold(): name}
    for alias in aliases:
        found.setdefault(alias.casefold(), alias)
    return list(found.values())[1:]


def _aliases(row: sqlite3.Row) -> list[str]:
    value = json.loads(row["aliases"] or "[]")
    return [str(item) for item in value] if isinstance(value, list) else []


def _reread(conn: sqlite3.Connection, tenant: str, entity_id: str) -> Entity:
    """The entity as stored after a write of this transaction."""
    row = _row(conn, tenant, entity_id)
    assert row is not None  # written in this transaction
    return to_entity(row)


def _row(conn: sqlite3.Connection, tenant: str, entity_id: str) -> sqlite3.Row | None:
    found: sqlite3.Row | None = conn.execute(
        "SELECT * FROM entities WHERE tenant = ? AND id = ?", (tenant, entity_id)
    ).fetchone()
    return found
