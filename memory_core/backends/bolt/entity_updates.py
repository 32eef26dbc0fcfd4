"""Entities read by id or by name or alias, updated, and merged, in the reference's graph.

As neo4j-agent-memory 0.8.0 keeps them: ``aliases`` is a top-level list property of the
``Entity`` node, ``attributes`` lives in the node's ``metadata`` JSON string under the key
``"attributes"`` (other keys another writer put there are kept), and every write that
changes the name or the aliases refreshes ``name_key`` and ``surface_keys`` (what the
reference's resolver looks names up by). A name is matched as ``find_entities`` matches it
on this backend (``toLower``), an alias through ``surface_keys``. Nodes the reference
marked ``merged_into`` another are not found by name.

A merge moves the source's edges to the target as the reference's ``MERGE_ENTITIES``
copies them (``MENTIONS``, ``RELATED_TO`` in both directions, ``SAME_AS``,
``EXTRACTED_FROM``, ``EXTRACTED_BY``, ``APPLIES_TO``, ``TOUCHED`` from a step, and
``TOUCHED`` from a trace (ours, see :mod:`.reasoning`); a moved
``RELATED_TO`` keeps its properties and gains ``migrated_from``), skipping what the
target has, then deletes the source node instead of marking it.
"""

from __future__ import annotations

from typing import Any

from neo4j import AsyncManagedTransaction

from memory_core.store import ConflictError, Entity, NotFoundError
from memory_core.store import requests as rq

from .cypher import ENTITY_KEYS, NOW
from .records import dump_metadata, load_metadata, to_entity
from .session import Connection, rows

_IN_SCOPE = "($tenant IS NULL OR e.tenant = $tenant)"
_KEY = "replace(toLower($name), '|', ' ')"

GET = f"""
MATCH (e:Entity {{id: $id}}) WHERE {_IN_SCOPE}
RETURN e {{.*}} AS entity
"""

BY_NAME = f"""
CALL () {{
    MATCH (e:Entity) WHERE e.name_key = toLower($name) RETURN e, 0 AS rank
  UNION ALL
    MATCH (e:Entity) WHERE e.surface_keys CONTAINS ('|' + {_KEY} + '|')
        AND e.name_key <> toLower($name)
    RETURN e, 1 AS rank
}}
WITH e, rank WHERE {_IN_SCOPE} AND e.merged_into IS NULL AND ($type IS NULL OR e.type = $type)
RETURN e {{.*}} AS entity
ORDER BY rank, e.created_at, e.id
LIMIT 1
"""

_TAKEN = f"""
MATCH (e:Entity) WHERE e.name_key = toLower($name) AND e.type = $type AND e.id <> $id
    AND {_IN_SCOPE} AND e.merged_into IS NULL
RETURN e.id AS id LIMIT 1
"""

_SET = f"""
MATCH (e:Entity {{id: $id}})
SET e.name = $name, e.description = $description, e.aliases = $aliases,
    e.metadata = $metadata, e.updated_at = {NOW}
SET {ENTITY_KEYS}
RETURN e {{.*}} AS entity
"""


def _moved(label: str, pattern: str, kept: str, extra: str = "") -> str:
    """Copy each edge of ``pattern`` (``r`` joining ``source`` and ``o``) to the target
    unless ``kept`` (a pattern on ``target`` and ``o``) exists; ``label`` names the
    count."""
    return f"""
CALL (source, target) {{
    MATCH {pattern}
    WHERE o <> target AND o <> source AND NOT EXISTS {{ {kept} }}
    {extra}
    RETURN count(*) AS {label}
}}"""


_RELATION = "coalesce(r.type, r.relation_type)"
_SAME_TYPE = f"WHERE coalesce(x.type, x.relation_type) = {_RELATION}"
MOVE = (
    """
MATCH (source:Entity {id: $source_id}), (target:Entity {id: $target_id})
"""
    + _moved(
        "mentions",
        "(source)<-[r:MENTIONS]-(o:Message)",
        "MATCH (o)-[:MENTIONS]->(target)",
        "CREATE (o)-[n:MENTIONS]->(target) SET n = properties(r)",
    )
    + _moved(
        "related_out",
        "(source)-[r:RELATED_TO]->(o:Entity)",
        f"MATCH (target)-[x:RELATED_TO]->(o) {_SAME_TYPE}",
        "CREATE (target)-[n:RELATED_TO]->(o) SET n = properties(r), n.migrated_from = source.id",
    )
    + _moved(
        "related_in",
        "(source)<-[r:RELATED_TO]-(o:Entity)",
        f"MATCH (target)<-[x:RELATED_TO]-(o) {_SAME_TYPE}",
        "CREATE (target)<-[n:RELATED_TO]-(o) SET n = properties(r), n.migrated_from = source.id",
    )
    + _moved(
        "same_as",
        "(source)-[r:SAME_AS]-(o:Entity)",
        "MATCH (target)-[:SAME_AS]-(o)",
        "CREATE (target)-[n:SAME_AS]->(o) SET n = properties(r), n.match_type = 'merged'",
    )
    + _moved(
        "extracted_from",
        "(source)-[r:EXTRACTED_FROM]->(o:Message)",
        "MATCH (target)-[:EXTRACTED_FROM]->(o)",
        "CREATE (target)-[n:EXTRACTED_FROM]->(o) SET n = properties(r), "
        "n.migrated_from = source.id",
    )
    + _moved(
        "extracted_by",
        "(source)-[r:EXTRACTED_BY]->(o:Extractor)",
        "MATCH (target)-[:EXTRACTED_BY]->(o)",
        "CREATE (target)-[n:EXTRACTED_BY]->(o) SET n = properties(r), n.migrated_from = source.id",
    )
    + _moved(
        "applies_to",
        "(source)<-[r:APPLIES_TO]-(o:Preference)",
        "MATCH (o)-[:APPLIES_TO]->(target)",
        "CREATE (o)-[n:APPLIES_TO]->(target) SET n = properties(r)",
    )
    + _moved(
        "touched",
        "(source)<-[r:TOUCHED]-(o:ReasoningStep|ReasoningTrace)",
        "MATCH (o)-[:TOUCHED]->(target)",
        "CREATE (o)-[n:TOUCHED]->(target) SET n = properties(r), n.migrated_from = source.id",
    )
    + """
DETACH DELETE source
RETURN count(*) AS merged
"""
)

# Facts of the scope whose subject names the source: ours by ``subject_key`` (case-folded
# in Python), another writer's (no key) by the exact subject.
RENAME_FACTS = """
MATCH (n:Fact)
WHERE ($tenant IS NULL OR n.tenant = $tenant)
    AND (n.subject_key IN $keys OR (n.subject_key IS NULL AND n.subject IN $names))
SET n.subject = $subject, n.subject_key = $subject_key
RETURN count(n) AS renamed
"""


async def get(conn: Connection, req: rq.GetEntity) -> Entity | None:
    """The ``get_entity`` hook."""
    found = await conn.run_read(GET, id=req.entity_id, tenant=req.tenant)
    return to_entity(found[0]["entity"]) if found else None


async def by_name(conn: Connection, req: rq.GetEntityByName) -> Entity | None:
    """The ``get_entity_by_name`` hook: a name before an alias, then the oldest."""
    found = await conn.run_read(BY_NAME, name=req.name, type=req.type, tenant=req.tenant)
    return to_entity(found[0]["entity"]) if found else None


async def update(conn: Connection, req: rq.UpdateEntity) -> Entity:
    """The ``update_entity`` hook: one transaction."""

    async def work(tx: AsyncManagedTransaction) -> Entity:
        props = await _props(tx, req.entity_id, req.tenant, "entity_id")
        name = str(props.get("name")) if req.name is None else req.name
        if req.name is not None:
            await _check_free(tx, props, name, req.tenant)
        entity = to_entity(props)
        description = entity.description if req.description is None else req.description
        aliases = entity.aliases if req.aliases is None else req.aliases
        attributes = entity.attributes if req.attributes is None else req.attributes
        return await _store(tx, props, name, description, aliases, attributes)

    return await conn.write(work)


async def merge(conn: Connection, req: rq.MergeEntities) -> Entity:
    """The ``merge_entities`` hook: one transaction."""

    async def work(tx: AsyncManagedTransaction) -> Entity:
        source = await _props(tx, req.source_id, req.tenant, "source_id")
        target = await _props(tx, req.target_id, req.tenant, "target_id")
        old, new = to_entity(source), to_entity(target)
        await rows(tx, MOVE, source_id=old.id, target_id=new.id)
        names = [old.name, *old.aliases]
        await rows(
            tx,
            RENAME_FACTS,
            tenant=req.tenant,
            keys=[name.casefold() for name in names],
            names=names,
            subject=new.name,
            subject_key=new.name.casefold(),
        )
        aliases = [*new.aliases, *names]
        description = new.description or old.description
        attributes = {**old.attributes, **new.attributes}
        return await _store(tx, target, new.name, description, aliases, attributes)

    return await conn.write(work)


async def _props(
    tx: AsyncManagedTransaction, entity_id: str, tenant: str | None, argument: str
) -> dict[str, Any]:
    found = await rows(tx, GET, id=entity_id, tenant=tenant)
    if not found:
        raise NotFoundError.missing("bolt", "entity", entity_id, argument=argument)
    props: dict[str, Any] = found[0]["entity"]
    return props


async def _check_free(
    tx: AsyncManagedTransaction, props: dict[str, Any], name: str, tenant: str | None
) -> None:
    taken = await rows(tx, _TAKEN, name=name, type=props.get("type"), id=props["id"], tenant=tenant)
    if taken:
        raise ConflictError(
            f"entity {taken[0]['id']} of type {props.get('type')} already has this name; "
            "merge_entities joins the two",
            argument="name",
        )


async def _store(
    tx: AsyncManagedTransaction,
    props: dict[str, Any],
    name: str,
    description: str | None,
    aliases: list[str],
    attributes: dict[str, Any],
) -> Entity:
    """Write the entity's new state (the attributes into its metadata JSON)."""
    metadata = load_metadata(props.get("metadata"))
    metadata.pop("aliases", None)  # the top-level list replaces an older writer's
    metadata.pop("attributes", None)
    if attributes:
        metadata["attributes"] = attributes
    [row] = await rows(
        tx,
        _SET,
        id=props["id"],
        name=name,
        description=description,
        aliases=_distinct(name, aliases),
        metadata=dump_metadata(metadata),
    )
    return to_entity(row["entity"])


def entity_extras(record: dict[str, Any]) -> dict[str, Any]:
    """An archive entity record's ``aliases`` and ``attributes`` as the importer writes
    them: the top-level list, and the metadata JSON holding the attributes (``None``
    without any, as the reference leaves an entity without metadata)."""
    attributes = record.get("attributes") or {}
    return {
        "aliases": _distinct(record["name"], list(record.get("aliases") or [])),
        "metadata": dump_metadata({"attributes": attributes} if attributes else {}),
    }


def _distinct(name: str, aliases: list[str]) -> list[str]:
    """``aliases`` each once ignoring case, the first spelling kept, without ``name``."""
    found: dict[str, str] = {name.casefold(): name}
    for alias in aliases:
        found.setdefault(alias.casefold(), alias)
    return list(found.values())[1:]
