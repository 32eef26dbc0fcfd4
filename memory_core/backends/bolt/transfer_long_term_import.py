"""Writing the long-term records of the Bolt bulk transfer: relationships, preferences
and facts (see :mod:`.transfer` and :mod:`.transfer_long_term`).

They are written in the batch's write transaction, in the graph the backend's own
writes make (:mod:`.relationships`, :mod:`.preferences`, :mod:`.facts`): ids,
timestamps, validity, ``properties`` and metadata as JSON strings, linked entities as
``APPLIES_TO {position}``, the ``(:User)-[:HAS_PREFERENCE]->`` link, and supersede links
as the reference keeps them (``SUPERSEDED_BY`` and ``valid_until``). A successor may come
later in the archive, so a superseded preference is first marked with the label
``MemoryCoreAwaitingSuccessor`` and the successor's id; at the end of each batch every
marked preference whose successor is there gets its ``SUPERSEDED_BY`` edge and loses the
mark (also across batches, and when an interrupted import is run again). A successor that
never arrives leaves the mark: the preference reads as superseded, with no successor
(an export still names it, as the archive did). The full-text indexes of search follow
every write by themselves.

Each kind of a batch takes a few statements, whatever its size: one finds where the ids
(and entities, and relationship ends) are, the records are decided in archive order in
Python, as the embedded importer decides them one by one (the ids the batch itself takes
are noted as it goes), then one statement writes them all. A record touches only the
tenant it names (multi-tenant): an id another tenant holds gets one of the record's own
tenant (:func:`~memory_core.archive.hooks.own_id`), and a link to an entity of another
tenant is never made. Each record is counted once, copied or skipped, as the embedded
importer counts it.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from neo4j import AsyncManagedTransaction

from memory_core.store import (
    FOREIGN_ID,
    ImportRules,
    Record,
    TransferReport,
    candidates,
    choose_id,
    parse_stamp,
)

from .records import dump_metadata
from .relationships import UPPER_TYPE
from .session import rows
from .transfer_long_term import AWAITING, SUCCESSOR

# Whether each id is taken, and by which tenant.
PLACES = {
    "preference": """
UNWIND $ids AS id
OPTIONAL MATCH (n:Preference {id: id})
RETURN id, n IS NOT NULL AS found, n.tenant AS tenant
""",
    "fact": """
UNWIND $ids AS id
OPTIONAL MATCH (n:Fact {id: id})
RETURN id, n IS NOT NULL AS found, n.tenant AS tenant
""",
    "relationship": """
UNWIND $ids AS id
WITH id, head(COLLECT {
    MATCH (s)-[r:RELATED_TO {id: id}]->() RETURN {tenant: s.tenant} AS hit
}) AS hit
RETURN id, hit IS NOT NULL AS found, hit.tenant AS tenant
""",
}

ENTITIES = """
UNWIND $ids AS id
MATCH (e:Entity {id: id})
RETURN e.id AS id, e.tenant AS tenant
"""

# The relationships already between each pair of entities, by type.
TRIPLES = f"""
UNWIND $pairs AS pair
MATCH (:Entity {{id: pair[0]}})-[r:RELATED_TO]->(:Entity {{id: pair[1]}})
RETURN pair[0] AS source, {UPPER_TYPE} AS type, pair[1] AS target, elementId(r) AS element
"""

DELETE_RELATIONSHIPS = """
CALL () {
    UNWIND $ids AS id
    MATCH ()-[r:RELATED_TO {id: id}]->()
    RETURN r
  UNION
    UNWIND $elements AS element
    MATCH ()-[r:RELATED_TO]->() WHERE elementId(r) = element
    RETURN r
}
DELETE r
"""

CREATE_RELATIONSHIPS = """
UNWIND $rows AS row
MATCH (s:Entity {id: row.source})
MATCH (t:Entity {id: row.target})
CREATE (s)-[r:RELATED_TO]->(t)
SET r = row.props
"""

# Writes (or, overwriting, replaces) each preference with its links; its successor is
# linked by RESOLVE_SUCCESSORS. A (:User) left with nothing by a replacement goes, as
# when a preference is deleted.
WRITE_PREFERENCES = f"""
UNWIND $rows AS row
MERGE (n:Preference {{id: row.props.id}})
WITH row, n, COLLECT {{ MATCH (u:User)-[:HAS_PREFERENCE]->(n) RETURN u }} AS before
CALL (n) {{
    MATCH (n)-[old:APPLIES_TO|SUPERSEDED_BY]->()
    DELETE old
}}
CALL (n) {{
    MATCH (:User)-[old:HAS_PREFERENCE]->(n)
    DELETE old
}}
SET n = row.props
REMOVE n:{AWAITING}
FOREACH (_ IN CASE WHEN row.successor IS NULL THEN [] ELSE [1] END |
    SET n:{AWAITING}, n.{SUCCESSOR} = row.successor)
WITH row, n, before
CALL (row, n) {{
    UNWIND range(0, size(row.linked) - 1) AS i
    MATCH (e:Entity {{id: row.linked[i]}})
    CREATE (n)-[:APPLIES_TO {{position: i}}]->(e)
}}
CALL (row, n) {{
    WITH row, n WHERE row.props.user_identifier IS NOT NULL
    MERGE (u:User {{identifier: row.props.user_identifier}})
    ON CREATE SET u.id = row.props.user_identifier, u.created_at = n.created_at
    CREATE (u)-[:HAS_PREFERENCE]->(n)
}}
CALL (before) {{
    UNWIND before AS u
    WITH DISTINCT u WHERE NOT EXISTS {{ (u)--() }}
    DELETE u
}}
"""

RESOLVE_SUCCESSORS = f"""
MATCH (n:{AWAITING})
MATCH (next:Preference {{id: n.{SUCCESSOR}}})
WHERE NOT $scoped OR next.tenant = n.tenant
MERGE (n)-[:SUPERSEDED_BY]->(next)
REMOVE n:{AWAITING}, n.{SUCCESSOR}
"""

WRITE_FACTS = """
UNWIND $rows AS row
MERGE (n:Fact {id: row.id})
SET n = row
"""

Placed = tuple[Record, str | None]  # a record and its tenant (None: single-tenant)
Triple = tuple[str, str, str]  # source, type, target


def _when(value: str | None) -> datetime | None:
    return None if value is None else parse_stamp(value)


def _iso(value: str | None) -> str | None:
    """A relationship's validity bound as :mod:`.relationships` stores it (ISO text)."""
    moment = _when(value)
    return None if moment is None else moment.isoformat()


def _vector(values: list[float] | None) -> list[float] | None:
    """Embeddings are kept as given, zero vectors too (as for messages)."""
    return None if values is None else [float(x) for x in values]


def _latest(found: list[dict[str, Any]], key: Callable[[dict[str, Any]], str]) -> list[Any]:
    """``found`` with only the last row of each ``key`` (a record written twice in one
    batch: what a write of each in turn would leave)."""
    return list({key(row): row for row in found}.values())


class _Ids:
    """Where the candidate ids of one kind's records are in the target: found by one
    lookup, then noted as the batch takes them."""

    def __init__(self, kind: str, holders: dict[str, Any], multi_tenant: bool) -> None:
        self.kind = kind
        self.holders = holders  # id -> its tenant (None too), absent when free
        self.multi_tenant = multi_tenant

    def place(self, archive_id: str, tenant: str | None) -> tuple[str | None, bool]:
        """The id a record takes in ``tenant`` and whether the tenant already has it
        (:func:`~memory_core.archive.rules.choose_id`)."""
        return choose_id(self.kind, archive_id, tenant, self.holders, self.multi_tenant)

    def take(self, ident: str, tenant: str | None) -> None:
        self.holders[ident] = tenant


class LongTermWriter:
    """The long-term records of one batch, in its write transaction. ``entities`` maps
    archive entity ids to the target's (as written or matched in this run); ``tally``
    counts every outcome."""

    def __init__(
        self,
        tally: TransferReport,
        entities: dict[str, str | None],
        on_conflict: str,
        multi_tenant: bool,
    ) -> None:
        self.tally = tally
        self.entities = entities
        self.multi_tenant = multi_tenant
        self.rules = ImportRules(tally, on_conflict, entities, multi_tenant)
        self.entity_tenants: dict[str, str | None] = {}

    async def run(self, tx: AsyncManagedTransaction, records: list[Record]) -> None:
        by_kind: dict[str, list[Placed]] = {}
        for record in records:
            tenant = self.rules.tenant(record, single=None)
            if self.multi_tenant and tenant is None:
                continue
            by_kind.setdefault(record["record"], []).append((record, tenant))
        await self.find_entities(tx, by_kind)
        await self.relationships(tx, by_kind.get("relationship", []))
        await self.preferences(tx, by_kind.get("preference", []))
        await self.facts(tx, by_kind.get("fact", []))

    async def find_entities(
        self, tx: AsyncManagedTransaction, by_kind: dict[str, list[Placed]]
    ) -> None:
        """The tenant of every target entity the batch's records name."""
        named = [
            r[k] for r, _ in by_kind.get("relationship", []) for k in ("source_id", "target_id")
        ]
        named += [e for r, _ in by_kind.get("preference", []) for e in r["linked_entities"]]
        targets = list({t for t in (self.entities.get(a) for a in named) if t is not None})
        if targets:
            found = await rows(tx, ENTITIES, ids=targets)
            self.entity_tenants = {row["id"]: row["tenant"] for row in found}

    def entity(self, archive_id: str, tenant: str | None) -> str | None:
        """The target id of an archive entity carried into ``tenant``."""
        target = self.entities.get(archive_id)
        if target is None or target not in self.entity_tenants:
            return None
        if self.multi_tenant and self.entity_tenants[target] != tenant:
            return None
        return target

    async def ids(
        self, tx: AsyncManagedTransaction, kind: str, wanted: list[tuple[str, str | None]]
    ) -> _Ids:
        """Where the candidate ids of ``wanted`` (archive id, tenant) are."""
        ids = list({i for a, t in wanted for i in candidates(kind, a, t)})
        found = await rows(tx, PLACES[kind], ids=ids) if ids else []
        holders = {row["id"]: row["tenant"] for row in found if row["found"]}
        return _Ids(kind, holders, self.multi_tenant)

    def admit(self, ids: _Ids, record: Record, tenant: str | None) -> str | None:
        """The id ``record`` is written under, or None (counted) when it is skipped."""
        return self.rules.admit(record["record"], *ids.place(record["id"], tenant))

    def copied(self, record: Record, ident: str) -> None:
        self.rules.copied(record, ident)

    # ------------------------------------------------------------------ relationships

    async def relationships(self, tx: AsyncManagedTransaction, items: list[Placed]) -> None:
        if not items:
            return
        ids = await self.ids(tx, "relationship", [(r["id"], t) for r, t in items])
        plan = _RelationshipPlan(await self.triples(tx, items))
        for record, tenant in items:
            ident = self.admit(ids, record, tenant)
            if ident is None:
                continue
            ends = self.ends(record, tenant)
            if ends is None:
                continue
            if ident in ids.holders:  # replaced (overwrite)
                plan.drop_id(ident)
            triple = (ends[0], record["type"], ends[1])
            if plan.holds(triple):
                if not self.rules.keeps_triple():
                    continue
                plan.drop_triple(triple)
            plan.create(triple, ident, _relationship_props(record, ident))
            ids.take(ident, tenant)
            self.copied(record, ident)
        await plan.write(tx)

    def ends(self, record: Record, tenant: str | None) -> tuple[str, str] | None:
        """A relationship's source and target in the target, both of ``tenant``; ``None``
        (counted) when one was not carried or is another tenant's."""
        return self.rules.ends(record, lambda name: self.entity(name, tenant))

    async def triples(
        self, tx: AsyncManagedTransaction, items: list[Placed]
    ) -> dict[Triple, list[str]]:
        """The element ids of the relationships already between the ends the records
        name, by (source, type, target)."""
        pairs = set()
        for record, tenant in items:
            source, target = (self.entity(record[k], tenant) for k in ("source_id", "target_id"))
            if source is not None and target is not None:
                pairs.add((source, target))
        held: dict[Triple, list[str]] = {}
        if pairs:
            for row in await rows(tx, TRIPLES, pairs=[list(p) for p in pairs]):
                held.setdefault((row["source"], row["type"], row["target"]), []).append(
                    row["element"]
                )
        return held

    # ------------------------------------------------------------------ preferences

    async def preferences(self, tx: AsyncManagedTransaction, items: list[Placed]) -> None:
        if not items:
            return
        wanted = [(r["id"], t) for r, t in items]
        wanted += [(r["superseded_by"], t) for r, t in items if r.get("superseded_by")]
        ids = await self.ids(tx, "preference", wanted)
        found: list[dict[str, Any]] = []
        for record, tenant in items:
            ident = self.admit(ids, record, tenant)
            if ident is None:
                continue
            linked = self.linked(record["linked_entities"], tenant)
            successor = record.get("superseded_by")
            if successor is not None:
                successor, _ = ids.place(successor, tenant)
                if successor is None:  # it cannot be written into this tenant either
                    self.tally.lose("preference.superseded_by", FOREIGN_ID)
            found.append(
                {
                    "props": _preference_props(record, ident, tenant),
                    "linked": linked,
                    "successor": successor,
                }
            )
            ids.take(ident, tenant)
            self.copied(record, ident)
        if found:
            written = _latest(found, lambda row: row["props"]["id"])
            await rows(tx, WRITE_PREFERENCES, rows=written)
        await rows(tx, RESOLVE_SUCCESSORS, scoped=self.multi_tenant)

    def linked(self, archive_ids: list[str], tenant: str | None) -> list[str]:
        """A preference's linked entities in the target, in order, each once; a link to an
        entity not carried, or of another tenant, is counted and dropped."""
        return self.rules.linked(
            archive_ids, lambda name: self.entity(name, tenant), "preference.linked_entities"
        )

    # ------------------------------------------------------------------ facts

    async def facts(self, tx: AsyncManagedTransaction, items: list[Placed]) -> None:
        if not items:
            return
        ids = await self.ids(tx, "fact", [(r["id"], t) for r, t in items])
        found: list[dict[str, Any]] = []
        for record, tenant in items:
            ident = self.admit(ids, record, tenant)
            if ident is None:
                continue
            found.append(_fact_props(record, ident, tenant))
            ids.take(ident, tenant)
            self.copied(record, ident)
        if found:
            await rows(tx, WRITE_FACTS, rows=_latest(found, lambda row: row["id"]))


class _RelationshipPlan:
    """What a batch deletes and creates among relationships, decided record by record:
    ``held`` are the ones already in the target (element ids by triple)."""

    def __init__(self, held: dict[Triple, list[str]]) -> None:
        self.held = held
        self.delete_ids: set[str] = set()
        self.delete_elements: set[str] = set()
        self.created: dict[str, tuple[Triple, dict[str, Any]]] = {}  # by id

    def drop_id(self, ident: str) -> None:
        """The relationship under ``ident`` goes (it is replaced)."""
        self.delete_ids.add(ident)
        self.created.pop(ident, None)

    def holds(self, triple: Triple) -> bool:
        return bool(self.held.get(triple)) or any(t == triple for t, _ in self.created.values())

    def drop_triple(self, triple: Triple) -> None:
        """The relationships of ``triple`` go (another id's, being overwritten)."""
        self.delete_elements.update(self.held.pop(triple, []))
        for ident in [i for i, (t, _) in self.created.items() if t == triple]:
            del self.created[ident]

    def create(self, triple: Triple, ident: str, props: dict[str, Any]) -> None:
        self.created[ident] = (triple, props)

    async def write(self, tx: AsyncManagedTransaction) -> None:
        if self.delete_ids or self.delete_elements:
            await rows(
                tx,
                DELETE_RELATIONSHIPS,
                ids=sorted(self.delete_ids),
                elements=sorted(self.delete_elements),
            )
        made = [
            {"source": triple[0], "target": triple[2], "props": props}
            for triple, props in self.created.values()
        ]
        if made:
            await rows(tx, CREATE_RELATIONSHIPS, rows=made)


def _relationship_props(record: Record, ident: str) -> dict[str, Any]:
    return {
        "id": ident,
        "type": record["type"],
        "relation_type": record["type"],
        "properties": dump_metadata(record["properties"]),
        "confidence": float(record["confidence"]),
        "valid_from": _iso(record.get("valid_from")),
        "valid_until": _iso(record.get("valid_until")),
        "created_at": _when(record["created_at"]),
    }


def _preference_props(record: Record, ident: str, tenant: str | None) -> dict[str, Any]:
    created = _when(record["created_at"])
    return {
        "id": ident,
        "category": record["category"],
        "preference": record["preference"],
        "context": record.get("context"),
        "confidence": float(record["confidence"]),
        "embedding": _vector(record.get("embedding")),
        "metadata": dump_metadata(record["metadata"]),
        "created_at": created,
        "valid_from": created,
        "valid_until": _when(record.get("superseded_at")),
        "user_identifier": record["user_identifier"],
        "tenant": tenant,
    }


def _fact_props(record: Record, ident: str, tenant: str | None) -> dict[str, Any]:
    return {
        "id": ident,
        "subject": record["subject"],
        "subject_key": record["subject"].casefold(),
        "predicate": record["predicate"],
        "object": record["object"],
        "confidence": float(record["confidence"]),
        "embedding": _vector(record.get("embedding")),
        "valid_from": _when(record.get("valid_from")),
        "valid_until": _when(record.get("valid_until")),
        "source_message_id": record.get("source_message_id"),
        "metadata": dump_metadata(record["metadata"]),
        "created_at": _when(record["created_at"]),
        "user_identifier": record["user_identifier"],
        "tenant": tenant,
    }
