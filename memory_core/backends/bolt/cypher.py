"""Every Cypher statement the Bolt backend runs.

All statements are constants assembled from constant fragments; user data only ever
travels as parameters. Two variants exist for statements that name a conversation: one
for a session target (``$session_id``; ``$own_id``, the deterministic id; ``$as_id``, the
conversation id the name may stand for, see ``Target.id_alias``; ``$tenant``) and one for
a ``conversation_id`` target (``$conversation_id``, ``$tenant``).
Statements that find or make entities exist once per :class:`EntityScope`: the global one
of a single-tenant backend and the per-tenant one of ``multi_tenant=True`` (see
:func:`scoped`).

Ordering. Messages written by memory-core carry ``seq`` (per-conversation counter kept in
``Conversation.next_seq``) and ``conversation_id``; the conversation's ``message_count``
equals its number of HAS_MESSAGE edges while every message in it is ours. Then reads walk
the ``Message(conversation_id, seq)`` index newest-first and stop after N rows. A
conversation another writer touched (neo4j-agent-memory writes no ``seq``) has a count
that disagrees with its degree; it is read in the reference's own order (timestamp, then
id) instead, and a write marks it permanently with ``message_count = -1``. Counting the
degree is O(1) in Neo4j.

Locking. A write first SETs a property of the conversation: the write lock is held until
commit, so concurrent appends serialise and every read of the tail, ``next_seq`` and
``message_count`` that follows sees the previous append. Nothing mutable is read before
that SET (Cypher may cache a property value it has read once).
"""

from __future__ import annotations

from dataclasses import dataclass

from memory_core.store import EntityType

NOW = "datetime.truncate('microsecond', datetime.realtime())"

# Which node labels an entity of each type gets (the reference's PascalCase labels).
_TYPE_LABELS = {t.value: t.value.capitalize() for t in EntityType}
TYPE_LABELS_FOREACH = "\n".join(
    f"FOREACH (_ IN CASE WHEN e.type = '{kind}' THEN [1] ELSE [] END | SET e:{label})"
    for kind, label in _TYPE_LABELS.items()
)

ENTITY_KEYS = (
    "e.name_key = toLower(e.name), "
    "e.surface_keys = reduce(acc = '|', form IN [e.name, e.canonical_name] + "
    "coalesce(e.aliases, []) | CASE WHEN form IS NULL THEN acc "
    "ELSE acc + replace(toLower(toString(form)), '|', ' ') + '|' END)"
)


@dataclass(frozen=True)
class EntityScope:
    """Where entities are looked up and made.

    Global (``tenant=False``, a single-tenant backend): every entity in the database, as
    in neo4j-agent-memory; entities made here get no ``tenant`` property. Per tenant
    (``tenant=True``, ``multi_tenant=True``): only entities whose ``tenant`` property is
    ``$tenant``, and those made here get it. An id of another tenant's entity is then
    simply not found. Lookups use ``Entity(tenant, name_key)`` and the MERGE the unique
    ``Entity(tenant, name, type)`` (race-free get-or-create).
    """

    tenant: bool

    def by_id(self, var: str, entity_id: str) -> str:
        """A node pattern for the entity with id ``entity_id`` (an expression)."""
        scope = ", tenant: $tenant" if self.tenant else ""
        return f"({var}:Entity {{id: {entity_id}{scope}}})"

    def named(self, var: str, name: str) -> str:
        """A predicate: ``var``'s name equals ``name`` (an expression) ignoring case."""
        scope = f"{var}.tenant = $tenant AND " if self.tenant else ""
        return f"{scope}{var}.name_key = toLower({name})"

    def aliased(self, var: str, name: str) -> str:
        """A predicate: ``name`` (an expression) is one of ``var``'s surface forms (name,
        canonical name, aliases) ignoring case, as the reference's ``surface_keys`` hold
        them."""
        scope = f"{var}.tenant = $tenant AND " if self.tenant else ""
        key = f"replace(toLower({name}), '|', ' ')"
        return f"{scope}{var}.surface_keys CONTAINS ('|' + {key} + '|')"

    def merge(self, name: str, kind: str) -> str:
        """MERGE ``e`` on (name, type) (expressions)."""
        scope = ", tenant: $tenant" if self.tenant else ""
        return f"MERGE (e:Entity {{name: {name}, type: {kind}{scope}}})"

    def entities_exist(self) -> str:
        """True when every id of ``$mention_ids`` names an entity."""
        return f"all(eid IN $mention_ids WHERE EXISTS {{ MATCH {self.by_id('', 'eid')} }})"

    def missing_ids(self) -> str:
        """The ids of ``$mention_ids`` that name no entity."""
        return f"[eid IN $mention_ids WHERE NOT EXISTS {{ MATCH {self.by_id('', 'eid')} }}]"


GLOBAL_ENTITIES = EntityScope(tenant=False)
TENANT_ENTITIES = EntityScope(tenant=True)

# A message's mentions with their place (records.to_refs orders them by it).
MENTIONS = "[(m)-[r:MENTIONS]->(e:Entity) | e {.id, .name, .type, position: r.position}]"


def _as_micros(expr: str, key: str) -> str:
    """Map projection entries for the temporal property ``expr``: ``{key}_us``, integer
    microseconds since the epoch, when it is a zoned DateTime (the driver's DateTime
    hydration cost more than the rest of a read), else null; ``key``, the value itself
    when another writer stored some other type, else null."""
    zoned = f"{expr} IS :: ZONED DATETIME"
    # Not epochSeconds: before 1970 it rounds toward zero, epochMillis is the floor.
    micros = f"{expr}.epochMillis * 1000 + {expr}.microsecond % 1000"
    return (
        f"{key}: CASE WHEN {zoned} THEN null ELSE {expr} END, "
        f"{key}_us: CASE WHEN {zoned} THEN {micros} END"
    )


_MESSAGE_TIMESTAMP = _as_micros("m.timestamp", "timestamp")
MESSAGE_PROJECTION = f"m {{.*, {_MESSAGE_TIMESTAMP}, mentions: {MENTIONS}}}"
# The same without mentions (the export reads them with their positions).
MESSAGE_FIELDS = f"m {{.*, {_MESSAGE_TIMESTAMP}}}"
# The conversation ``c`` as every statement returns it: its two timestamps travel as
# microseconds too (a list of a thousand conversations hydrated two thousand DateTimes).
CONVERSATION_PROJECTION = (
    f"c {{.*, {_as_micros('c.created_at', 'created_at')}, "
    f"{_as_micros('c.updated_at', 'updated_at')}}}"
)

# ---------------------------------------------------------------------------- resolving

# A session name that is the canonical string of a conversation id (``$as_id``, null
# otherwise) names that conversation when RESOLVE_ID would find it.
_NAMED_BY_ID = """
OPTIONAL MATCH (named:Conversation {id: $as_id})
WHERE $tenant IS NULL OR named.user_identifier = $tenant
"""

# The conversation of a session: the one its name is the id of (see above), else ours
# (deterministic id), else one another writer made for that session (in the tenant, when
# multi-tenant), newest first. Yields ``c``, null when there is none.
RESOLVE_SESSION = (
    _NAMED_BY_ID
    + """
OPTIONAL MATCH (found:Conversation {session_id: $session_id})
WHERE named IS NULL AND (found.id = $own_id OR $tenant IS NULL OR found.user_identifier = $tenant)
WITH named, found ORDER BY (found.id = $own_id) DESC, found.created_at DESC LIMIT 1
WITH coalesce(named, found) AS c
"""
)

RESOLVE_ID = """
OPTIONAL MATCH (c:Conversation {id: $conversation_id})
WHERE $tenant IS NULL OR c.user_identifier = $tenant
WITH c
"""


# Inside a write: turn ``c`` into ``conv``, creating the session's conversation if needed
# (MERGE on the uniquely constrained id is race-free). Rows stop when an explicit mention
# names an unknown entity (of the scope): nothing is written then.
def _get_or_create(scope: EntityScope) -> str:
    return f"""
WITH c WHERE {scope.entities_exist()}
WITH c, {NOW} AS now
MERGE (conv:Conversation {{id: coalesce(c.id, $own_id)}})
ON CREATE SET conv.session_id = $session_id, conv.title = $title,
    conv.metadata = $conversation_metadata, conv.created_at = now, conv.updated_at = now,
    conv.next_seq = 0, conv.message_count = 0, conv.user_identifier = $user
WITH conv
"""


def _existing(scope: EntityScope) -> str:
    return f"""
WITH c WHERE c IS NOT NULL AND {scope.entities_exist()}
WITH c AS conv
"""


# ---------------------------------------------------------------------------- appending

# After the lock: is every message of ``conv`` ours, and which message is the tail?
LOCK_AND_FIND_TAIL = f"""
SET conv.updated_at = {NOW}
WITH conv, coalesce(conv.message_count, 0) = COUNT {{ (conv)-[:HAS_MESSAGE]->() }} AS sequenced
WITH conv, sequenced, head(COLLECT {{
    WITH conv, sequenced WHERE sequenced
    MATCH (t:Message) WHERE t.conversation_id = conv.id AND t.seq IS NOT NULL
    RETURN t ORDER BY t.conversation_id DESC, t.seq DESC LIMIT 1
  UNION ALL
    WITH conv, sequenced WHERE NOT sequenced
    MATCH (conv)-[:HAS_MESSAGE]->(t:Message) WHERE NOT (t)-[:NEXT_MESSAGE]->()
    RETURN t ORDER BY t.timestamp DESC, t.id DESC LIMIT 1
}}) AS last
WITH conv, sequenced, last, coalesce(conv.next_seq, 0) AS seq0, {NOW} AS now
WITH conv, sequenced, last, seq0,
     CASE WHEN last IS NOT NULL AND last.timestamp >= now
          THEN last.timestamp + duration({{microseconds: 1}}) ELSE now END AS base
"""

LINK_USER = """
FOREACH (user IN CASE WHEN $user IS NULL THEN [] ELSE [$user] END |
    MERGE (u:User {identifier: user})
    ON CREATE SET u.id = user, u.created_at = base
    MERGE (u)-[:HAS_CONVERSATION]->(conv)
    SET conv.user_identifier = coalesce(conv.user_identifier, user)
)
"""


# Link ``m`` to ``e`` at place ``at`` of the references; an entity referred to twice keeps
# its first place.
_LINK = """
    MERGE (m)-[r:MENTIONS]->(e)
    ON CREATE SET r.confidence = 1.0, r.position = at
    ON MATCH SET r.position = CASE WHEN r.position IS NULL OR at < r.position
                                   THEN at ELSE r.position END"""


def _link_mentions(source: str, scope: EntityScope) -> str:
    """Unit subqueries linking ``m`` to the entities ``{source}.mention_ids``/``typed``/
    ``names`` describe, in ``scope`` (ids must exist; typed refs MERGE on name+type; a
    bare name links the one entity with that surface form, never creating one), each
    link keeping the reference's place (``position``)."""
    return f"""
CALL (m, {source}) {{
    UNWIND range(0, coalesce(size({source}.mention_ids), 0) - 1) AS k
    WITH m, {source}.mention_ids[k] AS eid, {source}.id_positions[k] AS at
    MATCH {scope.by_id("e", "eid")}
    {_LINK}
}}
CALL (m, {source}) {{
    UNWIND {source}.typed AS ref
    {scope.merge("ref.name", "ref.type")}
    ON CREATE SET e.id = ref.id, e.created_at = {NOW}, e.confidence = 1.0
    SET {ENTITY_KEYS}
    {TYPE_LABELS_FOREACH}
    WITH m, e, ref.at AS at
    {_LINK}
}}
CALL (m, {source}) {{
    UNWIND {source}.names AS named
    WITH m, named.at AS at, COLLECT {{
        MATCH (e:Entity)
        WHERE {scope.named("e", "named.name")} AND e.merged_into IS NULL
        RETURN DISTINCT e LIMIT 2
    }} AS found
    WITH m, at, found WHERE size(found) = 1
    WITH m, at, found[0] AS e
    {_LINK}
}}
"""


def _named_entities(scope: EntityScope) -> str:
    """A COLLECT subquery: the entities ``$identifiers`` name, each looked up as
    ``find_entities`` does (at most ``$limit``), the first ``$limit`` distinct ones in
    order (by identifier, then as ``find_entities`` orders them)."""
    return f"""COLLECT {{
        UNWIND range(0, size($identifiers) - 1) AS at
        WITH at, $identifiers[at] AS ident
        CALL (ident) {{
            {_named_by(scope, "ident")}
            WITH e, min(rank) AS rank
            WHERE e.merged_into IS NULL
            RETURN e, rank ORDER BY rank, e.name, e.id LIMIT $limit
        }}
        WITH e, min(at * 3 + rank) AS o
        RETURN e ORDER BY o, e.name, e.id LIMIT $limit
    }}"""


# A turn's question (``Scoped.open_message_*``): the entities its identifiers name are
# found by the statement that writes it, and linked; it returns them (``linked``).
def _mentions_found(scope: EntityScope) -> str:
    return f"""
    WITH m, {_named_entities(scope)} AS linked
    WITH m, linked, {{mention_ids: [e IN linked | e.id],
                      id_positions: range(0, size(linked) - 1), typed: [], names: []}}
         AS mentions"""


def _append_one(scope: EntityScope, mentions: bool = True, lookup: bool = False) -> str:
    link = _link_mentions("mentions", scope) if mentions else ""
    source = _mentions_found(scope) if lookup else "\n    WITH m, $mentions AS mentions"
    linked = ", [e IN linked | e {.*}] AS linked" if lookup else ""
    return f"""
OPTIONAL MATCH (dup:Message {{idempotency_scope: conv.id + ':' + $key_hash}})
CALL (conv, dup) {{
    WITH dup WHERE dup IS NOT NULL
    RETURN dup AS m, false AS created{", null AS linked" if lookup else ""}
  UNION ALL
    WITH conv, dup WHERE dup IS NULL
    {LOCK_AND_FIND_TAIL}
    CREATE (m:Message {{
        id: $id, role: $role, content: $content, embedding: $embedding,
        metadata: $metadata, timestamp: base, seq: seq0, conversation_id: conv.id,
        idempotency_key: $key, idempotency_scope: conv.id + ':' + $key_hash
    }})
    CREATE (conv)-[:HAS_MESSAGE]->(m)
    SET conv.next_seq = seq0 + 1, conv.updated_at = base,
        conv.message_count = CASE WHEN sequenced THEN coalesce(conv.message_count, 0) + 1
                                  ELSE -1 END
    FOREACH (p IN CASE WHEN last IS NULL THEN [] ELSE [last] END |
        CREATE (p)-[:NEXT_MESSAGE]->(m))
    FOREACH (_ IN CASE WHEN last IS NULL THEN [1] ELSE [] END |
        CREATE (conv)-[:FIRST_MESSAGE]->(m))
    {LINK_USER}{source}
    {link}
    RETURN m, true AS created{linked}
}}
RETURN conv, m, created{", linked" if lookup else ""}
"""


def _append_batch(scope: EntityScope, mentions: bool = True) -> str:
    link = _link_mentions("msg", scope) if mentions else ""
    return f"""
{LOCK_AND_FIND_TAIL}
UNWIND range(0, size($messages) - 1) AS i
WITH conv, sequenced, last, seq0, base, i, $messages[i] AS msg
CREATE (m:Message {{
    id: msg.id, role: msg.role, content: msg.content, embedding: msg.embedding,
    metadata: msg.metadata, seq: seq0 + i, conversation_id: conv.id,
    timestamp: coalesce(msg.timestamp, base + duration({{microseconds: i}}))
}})
CREATE (conv)-[:HAS_MESSAGE]->(m)
WITH conv, sequenced, last, seq0, base, i, m, msg
{link}
WITH conv, sequenced, last, seq0, base, i, m ORDER BY i
WITH conv, sequenced, last, seq0, base, collect(m) AS ms
SET conv.next_seq = seq0 + size(ms),
    conv.updated_at = base + duration({{microseconds: size(ms) - 1}}),
    conv.message_count = CASE WHEN sequenced THEN coalesce(conv.message_count, 0) + size(ms)
                              ELSE -1 END
FOREACH (first IN CASE WHEN last IS NULL THEN [head(ms)] ELSE [] END |
    CREATE (conv)-[:FIRST_MESSAGE]->(first))
{LINK_USER}
WITH conv, seq0, base, ms, CASE WHEN last IS NULL THEN ms ELSE [last] + ms END AS chain
FOREACH (j IN range(0, size(chain) - 2) |
    FOREACH (p IN [chain[j]] | FOREACH (n IN [chain[j + 1]] |
        CREATE (p)-[:NEXT_MESSAGE]->(n))))
WITH conv, seq0, base, ms
RETURN conv, seq0, base,
       CASE WHEN $with_mentions THEN [m IN ms | {MENTIONS}] END AS mentions
"""


def _write(resolve: str, target: str, body: str, scope: EntityScope, carry: str = "") -> str:
    """The statement that writes one message (``carry``: more of the body's columns to
    return, each after a comma)."""
    result = f"""
WITH c IS NOT NULL AS found, conv AS c, m, created{carry}
RETURN found,
       {scope.missing_ids()} AS missing,
       {CONVERSATION_PROJECTION} AS conversation,
       CASE WHEN m IS NULL THEN null ELSE {MESSAGE_PROJECTION} END AS message,
       created{carry}
"""
    return f"{resolve}\nOPTIONAL CALL (c) {{\n{target}\n{body}\n}}\n{result}"


# A batch returns one row with only what the caller cannot know: the conversation's id
# and session, the first sequence number and the store's base timestamp (message ``i``
# without a timestamp of its own gets ``base + i`` microseconds), and the mentions each
# message links when any were asked for. The messages themselves are built from the
# input: returning every stored node made the driver unpack three DateTimes per row and
# cost more than the write.
def _write_batch(resolve: str, target: str, body: str, scope: EntityScope) -> str:
    result = f"""
RETURN c IS NOT NULL AS found,
       {scope.missing_ids()} AS missing,
       conv {{.id, .session_id}} AS conversation,
       seq0, base, mentions
"""
    return f"{resolve}\nOPTIONAL CALL (c) {{\n{target}\n{body}\n}}\n{result}"


# Creating a conversation mentions nothing ($mention_ids is empty): the scope is moot.
CREATE_CONVERSATION_SESSION = _write(
    RESOLVE_SESSION,
    _get_or_create(GLOBAL_ENTITIES),
    f"""
    SET conv.title = coalesce(conv.title, $title),
        conv.metadata = CASE WHEN conv.metadata IS NULL OR conv.metadata IN ['{{}}', '']
            THEN $conversation_metadata ELSE conv.metadata END
    WITH conv, {NOW} AS base
    {LINK_USER}
    RETURN conv, null AS m, false AS created
    """,
    GLOBAL_ENTITIES,
)
CREATE_CONVERSATION_ID = _write(
    RESOLVE_ID,
    _existing(GLOBAL_ENTITIES),
    "RETURN conv, null AS m, false AS created",
    GLOBAL_ENTITIES,
)

# ---------------------------------------------------------------------------- reading


def newest_first(limit: str, since: str = "$since") -> str:
    """A COLLECT of ``c``'s newest ``limit`` messages (after ``since``), newest first."""
    return f"""COLLECT {{
    WITH c WHERE coalesce(c.message_count, 0) = COUNT {{ (c)-[:HAS_MESSAGE]->() }}
    MATCH (m:Message)
    WHERE m.conversation_id = c.id AND m.seq IS NOT NULL
      AND ({since} IS NULL OR m.timestamp > {since})
    RETURN m ORDER BY m.conversation_id DESC, m.seq DESC LIMIT {limit}
  UNION ALL
    WITH c WHERE coalesce(c.message_count, 0) <> COUNT {{ (c)-[:HAS_MESSAGE]->() }}
    MATCH (c)-[:HAS_MESSAGE]->(m:Message)
    WHERE {since} IS NULL OR m.timestamp > {since}
    RETURN m ORDER BY m.timestamp DESC, m.seq DESC, m.id DESC LIMIT {limit}
}}"""


def oldest_first(limit: str) -> str:
    """A COLLECT of ``c``'s oldest ``limit`` messages, oldest first."""
    return f"""COLLECT {{
    WITH c WHERE coalesce(c.message_count, 0) = COUNT {{ (c)-[:HAS_MESSAGE]->() }}
    MATCH (m:Message)
    WHERE m.conversation_id = c.id AND m.seq IS NOT NULL
    RETURN m ORDER BY m.conversation_id ASC, m.seq ASC LIMIT {limit}
  UNION ALL
    WITH c WHERE coalesce(c.message_count, 0) <> COUNT {{ (c)-[:HAS_MESSAGE]->() }}
    MATCH (c)-[:HAS_MESSAGE]->(m:Message)
    RETURN m ORDER BY m.timestamp ASC, m.seq ASC, m.id ASC LIMIT {limit}
}}"""


_GET_RESULT = f"""
RETURN {CONVERSATION_PROJECTION} AS conversation,
       [m IN {newest_first("$limit")} | {MESSAGE_PROJECTION}] AS messages
"""

GET_CONVERSATION_SESSION = RESOLVE_SESSION + _GET_RESULT
GET_CONVERSATION_ID = RESOLVE_ID + _GET_RESULT

RESOLVE_SESSION_ID = RESOLVE_SESSION + "RETURN c.id AS id"
RESOLVE_ID_ID = RESOLVE_ID + "RETURN c.id AS id"

# Listing: keyset pages, most recently updated first, ties by id (both descending).
#
# Dated conversations (``updated_at`` a zoned DateTime: every one memory-core or the
# reference writes) come first: a range seek on ``updated_at`` below the cursor's key, in
# index order, filtered to the cursor's tie, stopped after ``$limit`` rows. With a user
# (a tenant, or a user filter) the seek is on ``Conversation(user_identifier,
# updated_at, id)``: ordering by ``user_identifier`` too (fixed by the equality) lets the
# index supply the whole order. Without one it is on ``Conversation(updated_at)`` with a
# partial sort of equal timestamps by id. Both name their index in a seek hint: the
# planner otherwise picks by statistics, and on a small or freshly emptied store it chose
# the ``(user_identifier)`` index and a sort of every conversation of the user, or a scan
# of the composite index across users; with a plain ``USING INDEX`` it still scanned that
# index now and then (a hint whose index is missing is only a warning: the statement is
# then planned without it). The first page's bound is the largest
# DateTime Cypher has (a parameter cannot be: the driver's DateTime stops at year 9999).
# Undated conversations (``updated_at`` missing or of another type, which only another
# writer leaves) follow, by id descending; they are found by scanning the scope.
_NEWEST = "datetime('+999999999-12-31T23:59:59.999999999Z')"
_KEY = "datetime({epochSeconds: $seconds, nanosecond: $nanosecond})"
_TIE = f"AND CASE WHEN c.updated_at < {_KEY} THEN true ELSE c.id < $id END"
_LISTED = f"""
RETURN {CONVERSATION_PROJECTION} AS conversation,
       c.updated_at.epochMillis AS key_ms, c.updated_at.nanosecond AS key_ns
"""
_LISTED_UNDATED = f"""
RETURN {CONVERSATION_PROJECTION} AS conversation, null AS key_ms, null AS key_ns
"""


def _dated(user: bool, bound: str, tie: str) -> str:
    if user:
        return f"""
MATCH (c:Conversation)
USING INDEX SEEK c:Conversation(user_identifier, updated_at, id)
WHERE c.user_identifier = $user AND c.updated_at <= {bound} AND c.id IS NOT NULL {tie}
WITH c ORDER BY c.user_identifier DESC, c.updated_at DESC, c.id DESC LIMIT $limit
{_LISTED}"""
    return f"""
MATCH (c:Conversation)
USING INDEX SEEK c:Conversation(updated_at)
WHERE c.updated_at <= {bound} {tie}
WITH c ORDER BY c.updated_at DESC, c.id DESC LIMIT $limit
{_LISTED}"""


def _undated(user: bool) -> str:
    scope = "USING INDEX c:Conversation(user_identifier)\nWHERE c.user_identifier = $user AND "
    # Not ``NOT (c.updated_at IS :: ZONED DATETIME NOT NULL)``: Neo4j 5.26 finds no node
    # without the property with it when nothing else narrows the match (store-wide).
    return f"""
MATCH (c:Conversation)
{scope if user else "WHERE "}(c.updated_at IS NULL OR NOT c.updated_at IS :: ZONED DATETIME)
  AND ($id IS NULL OR c.id < $id)
WITH c ORDER BY c.id DESC LIMIT $limit
{_LISTED_UNDATED}"""


# (with a user, after a cursor) -> the statement
LIST_DATED = {
    (user, after): _dated(user, _KEY if after else _NEWEST, _TIE if after else "")
    for user in (False, True)
    for after in (False, True)
}
LIST_UNDATED = {user: _undated(user) for user in (False, True)}

# One row per session: where several conversations share a session id (written by
# another library, or other tenants seen by a single-tenant backend) ours wins, then the
# newest. ``$user``: the tenant of a multi-tenant store, else the caller's filter (None:
# every session). ``{order}`` is filled from a fixed table of (column, direction) constants.
LIST_SESSIONS_TEMPLATE = f"""
MATCH (c:Conversation)
WHERE ($user IS NULL OR c.user_identifier = $user)
  AND ($prefix IS NULL OR c.session_id STARTS WITH $prefix)
WITH c ORDER BY c.session_id, (c.next_seq IS NOT NULL) DESC, c.created_at DESC
WITH c.session_id AS session_id, head(collect(c)) AS c
WITH session_id, c, COUNT {{ (c)-[:HAS_MESSAGE]->() }} AS message_count,
     c.created_at AS created_at, coalesce(c.updated_at, c.created_at) AS updated_at
ORDER BY {{order}}
SKIP $offset LIMIT $limit
RETURN {CONVERSATION_PROJECTION} AS conversation, message_count,
       head([m IN {oldest_first("1")} | m.content]) AS first_content,
       head([m IN {newest_first("1", "null")} | m.content]) AS last_content
"""

SESSION_ORDER_COLUMNS = {
    "updated_at": "updated_at",
    "created_at": "created_at",
    "message_count": "message_count",
    "session_id": "session_id",
}


def list_sessions(order_by: str, direction: str) -> str:
    """The list_sessions statement for a validated ordering (keys of the table above)."""
    column = SESSION_ORDER_COLUMNS[order_by]
    way = {"asc": "ASC", "desc": "DESC"}[direction]
    order = f"{column} {way}" + ("" if column == "session_id" else ", session_id ASC")
    return LIST_SESSIONS_TEMPLATE.replace("{order}", order)


# ---------------------------------------------------------------------------- deleting

DELETE_MESSAGE = f"""
MATCH (m:Message {{id: $message_id}})
OPTIONAL MATCH (owner:Conversation)-[:HAS_MESSAGE]->(m)
WITH m, head(collect(owner)) AS c
WHERE $tenant IS NULL OR c.user_identifier = $tenant
CALL (c) {{
    WITH c WHERE c IS NOT NULL
    SET c.updated_at = {NOW}
}}
WITH m, c,
     c IS NOT NULL AND coalesce(c.message_count, 0) = COUNT {{ (c)-[:HAS_MESSAGE]->() }}
         AS sequenced,
     head(COLLECT {{ MATCH (p:Message)-[:NEXT_MESSAGE]->(m) RETURN p }}) AS prev,
     head(COLLECT {{ MATCH (m)-[:NEXT_MESSAGE]->(n:Message) RETURN n }}) AS next,
     EXISTS {{ MATCH (owner:Conversation)-[:FIRST_MESSAGE]->(m) WHERE owner = c }} AS was_first
FOREACH (_ IN CASE WHEN prev IS NOT NULL AND next IS NOT NULL THEN [1] ELSE [] END |
    MERGE (prev)-[:NEXT_MESSAGE]->(next))
FOREACH (_ IN CASE WHEN was_first AND next IS NOT NULL THEN [1] ELSE [] END |
    MERGE (c)-[:FIRST_MESSAGE]->(next))
FOREACH (_ IN CASE WHEN c IS NULL THEN [] ELSE [1] END |
    SET c.message_count = CASE WHEN sequenced THEN c.message_count - 1 ELSE -1 END)
DETACH DELETE m
RETURN count(*) AS deleted
"""

# Clearing also removes the (:User) nodes linked to the cleared conversations once nothing
# else is attached to them (LINK_USER MERGEs them on write; a User with other
# conversations or any other relationship stays). Rows are collected first so a User
# shared by two cleared conversations is looked at once, after both are gone.
_CLEAR = """
WITH collect(c) AS doomed
WITH doomed, COLLECT {
    UNWIND doomed AS c
    MATCH (u:User)-[:HAS_CONVERSATION]->(c)
    RETURN DISTINCT u
} AS users
CALL (doomed) {
    UNWIND doomed AS c
    CALL (c) {
        MATCH (c)-[:HAS_MESSAGE]->(m:Message)
        DETACH DELETE m
    }
    DETACH DELETE c
}
CALL (users) {
    UNWIND users AS u
    WITH u WHERE NOT EXISTS { (u)--() }
    DELETE u
}
RETURN size(doomed) AS deleted
"""

CLEAR_SESSION_SESSION = (
    _NAMED_BY_ID
    + """
OPTIONAL MATCH (c:Conversation {session_id: $session_id})
WHERE named IS NULL AND (c.id = $own_id OR $tenant IS NULL OR c.user_identifier = $tenant)
WITH coalesce(named, c) AS c
"""
    + _CLEAR
)

CLEAR_SESSION_ID = (
    """
MATCH (c:Conversation {id: $conversation_id})
WHERE $tenant IS NULL OR c.user_identifier = $tenant
"""
    + _CLEAR
)

# The session whose reasoning traces clear_session deletes with the conversation: that
# of the conversation a session name stands for as an id (see _NAMED_BY_ID), else the
# name; for a conversation id, its conversation's (null when there is none).
SESSION_OF_SESSION = (
    _NAMED_BY_ID
    + """
RETURN coalesce(named.session_id, $session_id) AS session
"""
)

SESSION_OF_ID = """
OPTIONAL MATCH (c:Conversation {id: $conversation_id})
WHERE $tenant IS NULL OR c.user_identifier = $tenant
RETURN head(collect(c.session_id)) AS session
"""

# Inside a ``CALL`` over ``tool`` once some of its calls were deleted: its running totals
# recomputed from the calls left, by the reference's rule (see :mod:`.reasoning`), so the
# reference's statistics stop counting them. DROP_TOOL then removes one left with no call
# and no link.
RECOUNT_TOOL = """    CALL (tool) {
        OPTIONAL MATCH (tool)<-[:INSTANCE_OF]-(x:ToolCall)
        RETURN count(x) AS total,
               count(CASE WHEN x.status = 'success' THEN 1 END) AS successes,
               count(CASE WHEN x.status IN ['error', 'timeout'] THEN 1 END) AS failures,
               sum(coalesce(x.duration_ms, 0)) AS duration, max(x.timestamp) AS last
    }
    SET tool.total_calls = total, tool.successful_calls = successes,
        tool.failed_calls = failures, tool.total_duration_ms = duration,
        tool.last_used_at = last
"""
DROP_TOOL = """    WITH tool WHERE NOT EXISTS { (tool)--() }
    DELETE tool
"""

# A session's traces (in the tenant; on a single-tenant store whoever's, the reference's
# too), and those a conversation of the session links by HAS_TRACE (the link the
# reference's clear_session follows), with their steps and tool calls; then each (:User)
# those traces were linked to, and each (:Tool) those calls were of, once nothing else is
# attached to it, as _CLEAR does for users. A Tool that stays gets its running totals
# recomputed from the calls left, as forget_user does (the reference's own delete leaves
# them stale: its statistics would go on counting deleted calls).
DELETE_SESSION_TRACES = (
    """
CALL () {
    MATCH (t:ReasoningTrace {session_id: $session})
    WHERE $tenant IS NULL OR t.tenant = $tenant
    RETURN t
  UNION
    MATCH (c:Conversation {session_id: $session})-[:HAS_TRACE]->(t:ReasoningTrace)
    WHERE $tenant IS NULL OR (c.user_identifier = $tenant AND t.tenant = $tenant)
    RETURN t
}
WITH collect(t) AS doomed
WITH doomed, COLLECT {
    UNWIND doomed AS t
    MATCH (u:User)-[:HAS_TRACE]->(t)
    RETURN DISTINCT u
} AS users, COLLECT {
    UNWIND doomed AS t
    MATCH (t)-[:HAS_STEP]->(:ReasoningStep)-[:USES_TOOL]->(:ToolCall)-[:INSTANCE_OF]->(tool:Tool)
    RETURN DISTINCT tool
} AS tools
CALL (doomed) {
    UNWIND doomed AS t
    CALL (t) {
        MATCH (t)-[:HAS_STEP]->(:ReasoningStep)-[:USES_TOOL]->(c:ToolCall)
        DETACH DELETE c
    }
    CALL (t) {
        MATCH (t)-[:HAS_STEP]->(s:ReasoningStep)
        DETACH DELETE s
    }
    DETACH DELETE t
}
CALL (tools) {
    UNWIND tools AS tool
"""
    + RECOUNT_TOOL
    + DROP_TOOL
    + """}
CALL (users) {
    UNWIND users AS n
    WITH n WHERE NOT EXISTS { (n)--() }
    DELETE n
}
RETURN size(doomed) AS deleted
"""
)

# ---------------------------------------------------------------------------- searching

# The best ``$k`` full-text matches, as one row: ``seen``, how many the index yielded, and
# ``hits``, those in scope as ``[id, content, metadata, score]``, best Lucene score first
# (the procedure yields them in that order and nothing after it reorders them). The
# caller scores them on the shared scale and loads the messages it keeps; if the ``$k``
# matches held too few in scope it asks again for more. One collected row, not a stream:
# the driver took 20 ms to receive 200 records one by one and 6 ms for one list of them.
#
# In one conversation whose messages all carry ``conversation_id`` (all were written here:
# its ``message_count`` covers every HAS_MESSAGE), ``$lucene`` gets a required clause on
# the indexed ``conversation_id``: Lucene then yields that conversation's hits (and those
# of any conversation whose id ends in the same twelve hex digits, for the scope filter to
# drop) instead of every hit in the database. The id's last group is one token (a phrase
# of all five costs 0.4 ms more at 100k hits). Otherwise (other writers' messages, or an
# id that is not a UUID) the query stays unrestricted; the scope filter decides either way.
#
# The clause's weight is NEGLIGIBLE_BOOST, not 0: with a zero weight Lucene gives up
# skipping blocks of hits that cannot reach the top ``$k`` (measured: 3.0 against 1.5 ms
# when the query word is in all of 200k messages, half of them in the conversation). The
# scores stay exactly the unrestricted ones: Lucene adds the clause's score (below
# 100 times 1e-30) to the query's float32 score in double precision and rounds back to
# float32, and no BM25 score is so small that this is half a float32 step.
# When ``m`` was written, for ranking equal scores: its time (microseconds; 0 when another
# writer stored something else) and its place in its conversation (-1 when it has none).
WRITTEN = (
    "[CASE WHEN m.timestamp IS :: ZONED DATETIME "
    "THEN m.timestamp.epochMillis * 1000 + m.timestamp.microsecond % 1000 ELSE 0 END, "
    "coalesce(m.seq, -1)]"
)
_TEXT_CANDIDATES = """
CALL db.index.fulltext.queryNodes($index, lucene, {limit: $k}) YIELD node AS m, score
OPTIONAL MATCH (c:Conversation)-[:HAS_MESSAGE]->(m)
WHERE {scope}
RETURN count(*) AS seen,
       collect(CASE WHEN c IS NULL THEN null
                    ELSE [m.id, m.content, m.metadata, score, {written}] END) AS hits
""".replace("{written}", WRITTEN)
_TENANT_SCOPE = "($tenant IS NULL OR c.user_identifier = $tenant)"
# 1e-30, written out: Lucene's query syntax takes no exponent.
NEGLIGIBLE_BOOST = "0." + "0" * 29 + "1"
UUID_PATTERN = "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"


def _lucene_in(conv: str) -> str:
    """``$lucene``, restricted to the conversation ``conv`` when it is safe to."""
    return (
        f"CASE WHEN {conv} IS NULL "
        f"OR coalesce({conv}.message_count, 0) <> COUNT {{ ({conv})-[:HAS_MESSAGE]->() }} "
        f"OR NOT {conv}.id =~ '{UUID_PATTERN}' THEN $lucene "
        f"ELSE $lucene + ' AND conversation_id:' + substring({conv}.id, 24) "
        f"+ '^{NEGLIGIBLE_BOOST}' END"
    )


# Across the tenant's conversations, or in one known conversation (``$conversation_id``).
TEXT_CANDIDATES = (
    "OPTIONAL MATCH (scope:Conversation {id: $conversation_id})\n"
    f"WITH {_lucene_in('scope')} AS lucene\n"
) + _TEXT_CANDIDATES.replace(
    "{scope}", f"($conversation_id IS NULL OR c.id = $conversation_id) AND {_TENANT_SCOPE}"
)

# In a session's conversation, resolved in the same statement (seen 0 when it has none).
TEXT_CANDIDATES_SESSION = (
    RESOLVE_SESSION
    + "WITH c, c.id AS scope_id WHERE scope_id IS NOT NULL\n"
    + f"WITH scope_id, {_lucene_in('c')} AS lucene\n"
    + _TEXT_CANDIDATES.replace("{scope}", f"c.id = scope_id AND {_TENANT_SCOPE}")
)

# Exact cosine over one conversation (zero vectors are skipped: cosine is undefined).
VECTOR_HITS_CONVERSATION = """
MATCH (c:Conversation {id: $conversation_id})-[:HAS_MESSAGE]->(m:Message)
WHERE m.embedding IS NOT NULL AND size(m.embedding) = size($vector)
  AND any(x IN m.embedding WHERE x <> 0)
WITH m, vector.similarity.cosine(m.embedding, $vector) AS similarity
WHERE similarity > 0.5
RETURN m.id AS id, 2 * similarity - 1 AS score, m.metadata AS metadata, {WRITTEN} AS written
ORDER BY score DESC, id ASC
""".replace("{WRITTEN}", WRITTEN)

# Approximate nearest neighbours from the vector index, in its order (``near``: its own
# score, approximate: the index quantizes the vectors it holds), each scored by the exact
# cosine of its stored embedding, as every backend scores a vector hit; ``keep`` says
# whether a hit is related (cosine > 0) and in the tenant's scope. Every neighbour is
# returned so the caller can tell when the index has run out.
VECTOR_HITS_INDEX = """
CALL db.index.vector.queryNodes($index, $k, $vector) YIELD node AS m, score
OPTIONAL MATCH (owner:Conversation)-[:HAS_MESSAGE]->(m)
WITH m, score, head(collect(owner)) AS c
WITH m, score, c, vector.similarity.cosine(m.embedding, $vector) AS similarity
RETURN m.id AS id, 2 * similarity - 1 AS score, 2 * score - 1 AS near,
       m.metadata AS metadata, {WRITTEN} AS written,
       similarity > 0.5 AND c IS NOT NULL AND ($tenant IS NULL OR c.user_identifier = $tenant)
           AS keep
ORDER BY near DESC, id ASC
""".replace("{WRITTEN}", WRITTEN)

LOAD_MESSAGES = f"""
MATCH (m:Message) WHERE m.id IN $ids
OPTIONAL MATCH (owner:Conversation)-[:HAS_MESSAGE]->(m)
WITH m, head(collect(owner)) AS c
RETURN {MESSAGE_PROJECTION} AS message, c.id AS conversation_id, c.session_id AS session_id
"""


def around(count: int) -> str:
    """Each message ``$ids[i]`` of the tenant with the ``count`` messages before and after
    it in its conversation, oldest first, in the order reads use (see the module
    docstring): by ``seq`` along the ``Message(conversation_id, seq)`` index in a
    conversation only memory-core wrote, else by (timestamp, seq, id) among all of the
    conversation's messages. ``count`` is an int the caller checked."""
    n = int(count)
    return f"""
UNWIND range(0, size($ids) - 1) AS i
MATCH (c:Conversation)-[:HAS_MESSAGE]->(hit:Message {{id: $ids[i]}})
WHERE $tenant IS NULL OR c.user_identifier = $tenant
WITH i, c, hit, hit.seq IS NOT NULL
     AND coalesce(c.message_count, 0) = COUNT {{ (c)-[:HAS_MESSAGE]->() }} AS ours
CALL (c, hit, ours) {{
    WITH c, hit WHERE ours
    MATCH (m:Message) WHERE m.conversation_id = c.id AND m.seq <= hit.seq
    RETURN m ORDER BY m.conversation_id DESC, m.seq DESC LIMIT {n + 1}
  UNION ALL
    WITH c, hit WHERE ours
    MATCH (m:Message) WHERE m.conversation_id = c.id AND m.seq > hit.seq
    RETURN m ORDER BY m.conversation_id ASC, m.seq ASC LIMIT {n}
  UNION ALL
    WITH c, hit WHERE NOT ours
    MATCH (c)-[:HAS_MESSAGE]->(m:Message)
    WITH hit, m ORDER BY m.timestamp ASC, m.seq ASC, m.id ASC
    WITH hit, collect(m) AS every
    WITH every, [k IN range(0, size(every) - 1) WHERE every[k] = hit][0] AS at
    UNWIND every[CASE WHEN at < {n} THEN 0 ELSE at - {n} END..at + {n + 1}] AS m
    RETURN m
}}
WITH i, c, ours, m
ORDER BY i, CASE WHEN ours THEN m.seq END, m.timestamp, m.seq, m.id
RETURN i, c.id AS conversation_id, c.session_id AS session_id,
       collect({MESSAGE_PROJECTION}) AS messages
"""


# ---------------------------------------------------------------------------- entities


def _add_entity(scope: EntityScope) -> str:
    return f"""
{scope.merge("$name", "$type")}
ON CREATE SET e.id = $id, e.description = $description, e.confidence = 1.0,
    e.created_at = {NOW}
ON MATCH SET e.description = coalesce(e.description, $description)
SET {ENTITY_KEYS}
{TYPE_LABELS_FOREACH}
RETURN e {{.*}} AS entity
"""


def _named_by(scope: EntityScope, identifier: str) -> str:
    """A subquery: the entities ``identifier`` (a parameter or a variable) names, each
    with how (rank 0: its id, 1: its name, 2: an alias; ignoring case)."""
    imported = "" if identifier.startswith("$") else identifier
    return f"""CALL ({imported}) {{
    MATCH {scope.by_id("e", identifier)}
    RETURN e, 0 AS rank
  UNION ALL
    MATCH (e:Entity) WHERE {scope.named("e", identifier)}
    RETURN e, 1 AS rank
  UNION ALL
    MATCH (e:Entity) WHERE {scope.aliased("e", identifier)}
    RETURN e, 2 AS rank
}}"""


def _find_entities(scope: EntityScope) -> str:
    return f"""
{_named_by(scope, "$identifier")}
WITH e, min(rank) AS rank
WHERE ($type IS NULL OR e.type = $type) AND e.merged_into IS NULL
RETURN e {{.*}} AS entity
ORDER BY rank, e.name, e.id
LIMIT $limit
"""


def _delete_entity(scope: EntityScope) -> str:
    return f"""
OPTIONAL MATCH {scope.by_id("e", "$entity_id")}
WITH e, e IS NOT NULL AS found
DETACH DELETE e
RETURN found
"""


# ---------------------------------------------------------------------------- by scope


@dataclass(frozen=True)
class Scoped:
    """The statements whose text depends on the :class:`EntityScope`. The ``plain_*``
    variants write messages that mention nothing: without the three mention subqueries
    that would otherwise run (on empty lists) for every message."""

    add_message_session: str
    add_message_id: str
    add_batch_session: str
    add_batch_id: str
    plain_message_session: str
    plain_message_id: str
    plain_batch_session: str
    plain_batch_id: str
    add_entity: str
    find_entities: str
    delete_entity: str
    open_message_session: str
    open_message_id: str

    @classmethod
    def build(cls, scope: EntityScope) -> Scoped:
        one, batch = _append_one(scope), _append_batch(scope)
        plain_one, plain_batch = _append_one(scope, False), _append_batch(scope, False)
        opening = _append_one(scope, lookup=True)
        get_or_create, existing = _get_or_create(scope), _existing(scope)
        return cls(
            add_message_session=_write(RESOLVE_SESSION, get_or_create, one, scope),
            add_message_id=_write(RESOLVE_ID, existing, one, scope),
            add_batch_session=_write_batch(RESOLVE_SESSION, get_or_create, batch, scope),
            add_batch_id=_write_batch(RESOLVE_ID, existing, batch, scope),
            plain_message_session=_write(RESOLVE_SESSION, get_or_create, plain_one, scope),
            plain_message_id=_write(RESOLVE_ID, existing, plain_one, scope),
            plain_batch_session=_write_batch(RESOLVE_SESSION, get_or_create, plain_batch, scope),
            plain_batch_id=_write_batch(RESOLVE_ID, existing, plain_batch, scope),
            add_entity=_add_entity(scope),
            find_entities=_find_entities(scope),
            delete_entity=_delete_entity(scope),
            open_message_session=_write(RESOLVE_SESSION, get_or_create, opening, scope, ", linked"),
            open_message_id=_write(RESOLVE_ID, existing, opening, scope, ", linked"),
        )

    def message(self, session: bool, mentions: bool) -> str:
        """The ``add_message`` statement for a session or id target."""
        if mentions:
            return self.add_message_session if session else self.add_message_id
        return self.plain_message_session if session else self.plain_message_id

    def batch(self, session: bool, mentions: bool) -> str:
        """The batch statement for a session or id target."""
        if mentions:
            return self.add_batch_session if session else self.add_batch_id
        return self.plain_batch_session if session else self.plain_batch_id


GLOBAL = Scoped.build(GLOBAL_ENTITIES)
PER_TENANT = Scoped.build(TENANT_ENTITIES)


def scoped(tenant: str | None) -> Scoped:
    """The statements for a call's tenant (``None``: a single-tenant backend)."""
    return GLOBAL if tenant is None else PER_TENANT
