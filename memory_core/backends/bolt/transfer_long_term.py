"""Exporting the long-term records of the Bolt bulk transfer: relationships, preferences
and facts (see :mod:`.transfer`; :mod:`.transfer_long_term_import` writes them).

Each kind of a tenant is read by id, in keyset pages (each its own read transaction), as
the backend reads it (:mod:`.relationships`, :mod:`.preferences`, :mod:`.facts`): what
neo4j-agent-memory wrote exports as memory-core reads it (a preference's user from its
``(:User)`` link, a relationship without ``id`` under its element id, the type as it was
spelled), with the stored embeddings. A preference an import left waiting for a
successor that never came exports with that successor's id, as the archive had it. A
relationship's ``user_identifier`` is its source entity's tenant, as an entity's is
(also on a single-tenant store).
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from typing import Any

from memory_core.store import Record
from memory_core.store import transfer_records as rec

from . import facts, preferences, relationships
from .session import Connection

# An imported preference whose successor is not written yet carries this label and the
# successor's id in this property (see :mod:`.transfer_long_term_import`).
AWAITING = "MemoryCoreAwaitingSuccessor"
SUCCESSOR = "memory_core_successor"


def users_preference(var: str) -> str:
    """Cypher true for a preference ``var`` of one of ``$users`` (its ``user_identifier``,
    or, when it has none, a ``(:User)`` link, as :mod:`.preferences` reads it)."""
    return (
        f"({var}.user_identifier IN $users OR ({var}.user_identifier IS NULL AND EXISTS "
        f"{{ MATCH (u:User)-[:HAS_PREFERENCE]->({var}) WHERE u.identifier IN $users }}))"
    )


def entity_held(var: str) -> str:
    """Cypher true for an entity ``var`` an export holds: all of them unless it is
    narrowed to sessions (``$prefix``) or users (``$users``, single-tenant: an entity is
    theirs by its tenant); then also those a message of a conversation in scope mentions,
    and (narrowed to users only) those their preferences link."""
    return f"""(
    ($prefix IS NULL AND ($users IS NULL OR {var}.tenant IN $users))
    OR (($prefix IS NOT NULL OR $users IS NOT NULL) AND EXISTS {{
      MATCH (c:Conversation)-[:HAS_MESSAGE]->(:Message)-[:MENTIONS]->({var})
      WHERE ($tenant IS NULL OR c.user_identifier = $tenant)
        AND ($users IS NULL OR c.user_identifier IN $users)
        AND ($prefix IS NULL OR c.session_id STARTS WITH $prefix)
    }})
    OR ($prefix IS NULL AND $users IS NOT NULL AND EXISTS {{
      MATCH (p:Preference)-[:APPLIES_TO]->({var})
      WHERE ($tenant IS NULL OR p.tenant = $tenant) AND {users_preference("p")}
    }})
  )"""


# A tenant's relationships (both ends of it), by id; narrowed to users, those between
# entities the export holds. ``tenant`` is their source's, also on a single-tenant store.
RELATIONSHIP_PAGE = f"""
MATCH (s:Entity)-[r:RELATED_TO]->(t:Entity)
WITH s, r, t, coalesce(r.id, elementId(r)) AS rid
WHERE rid > $after AND ($tenant IS NULL OR (s.tenant = $tenant AND t.tenant = $tenant))
  AND ($users IS NULL OR ({entity_held("s")} AND {entity_held("t")}))
WITH s, r, rid ORDER BY rid LIMIT $limit
RETURN rid AS id, {relationships.PROJECTION} AS item, s.tenant AS tenant, null AS embedding
"""

PREFERENCE_PAGE = f"""
MATCH (n:Preference)
WHERE n.id > $after AND ($tenant IS NULL OR n.tenant = $tenant)
  AND ($users IS NULL OR {users_preference("n")})
WITH n ORDER BY n.id LIMIT $limit
RETURN n.id AS id, {preferences.PROJECTION} AS item, null AS tenant, n.embedding AS embedding,
       n.{SUCCESSOR} AS awaiting
"""

FACT_PAGE = f"""
MATCH (n:Fact)
WHERE n.id > $after AND ($tenant IS NULL OR n.tenant = $tenant)
  AND ($users IS NULL OR n.user_identifier IN $users)
WITH n ORDER BY n.id LIMIT $limit
RETURN n.id AS id, {facts.PROJECTION} AS item, null AS tenant, n.embedding AS embedding
"""


def _embedding(value: Any) -> list[float] | None:
    """A stored vector as the archive takes it (another writer's value that is not a
    list of finite numbers: none)."""
    if not isinstance(value, list):
        return None
    if not all(isinstance(x, int | float) and not isinstance(x, bool) for x in value):
        return None
    values = [float(x) for x in value]
    return values if all(math.isfinite(x) for x in values) else None


def _relationship(row: dict[str, Any]) -> Record:
    return rec.relationship(relationships.to_relationship(row["item"]), row["tenant"])


def _preference(row: dict[str, Any]) -> Record:
    item = row["item"]
    if item.get("superseded_by") is None and isinstance(row["awaiting"], str):
        # An import named a successor it has not (yet) written: the archive keeps it.
        item = {**item, "superseded_by": row["awaiting"]}
    return rec.preference(preferences.to_preference(item), _embedding(row["embedding"]))


def _fact(row: dict[str, Any]) -> Record:
    return rec.fact(facts.to_fact(row["item"]), _embedding(row["embedding"]))


KINDS = (
    (RELATIONSHIP_PAGE, _relationship),
    (PREFERENCE_PAGE, _preference),
    (FACT_PAGE, _fact),
)


async def export_long_term(
    conn: Connection, tenant: str | None, users: list[str] | None, limit: int
) -> AsyncIterator[Record]:
    """A tenant's relationships, preferences and facts (``tenant`` None: every one of a
    single-tenant store), each kind by id, in pages of ``limit``. ``users`` (a
    single-tenant store narrowed to them): their preferences and facts, and the
    relationships between entities the export holds."""
    for page, build in KINDS:
        after = ""
        while True:
            found = await conn.run_read(
                page, after=after, tenant=tenant, users=users, prefix=None, user=None, limit=limit
            )
            for row in found:
                yield build(row)
            if len(found) < limit:
                break
            after = found[-1]["id"]
