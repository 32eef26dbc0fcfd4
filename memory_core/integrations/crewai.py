"""CrewAI: a memory storage that keeps a crew's memories in memory-core.

``pip install "memory-core[crewai]"`` (in an environment without ``memory-core[mcp]``:
crewai 1.15 requires ``mcp<2``)::

    from crewai import Crew, Memory
    from memory_core.sync import open_backend
    from memory_core.integrations.crewai import MemoryStorage

    backend = open_backend("sqlite:///memory.db")  # or postgresql://…, bolt://…
    storage = MemoryStorage(backend, user_identifier="ana")
    crew = Crew(agents=[...], tasks=[...], memory=Memory(storage=storage, llm=..., embedder=...))

CrewAI 1.15 has one memory, ``crewai.Memory``: its LLM turns what agents learn into short
records (content, a scope path such as ``/crew/research/agent/writer``, categories,
importance, metadata) and its embedder turns each into a vector; a pluggable storage, the
``StorageBackend`` protocol, keeps the records and finds them by vector. This module's
:class:`MemoryStorage` is such a storage.

Mapping. Each record is one **fact of the storage's user**: subject :data:`SUBJECT`,
predicate the SHA-256 of the record's id, object the record's content (so memory-core's own
``search_facts`` finds it by words, and by meaning with the backend's embedder), and the
whole record, its embedding packed as base64 of little-endian doubles, in the fact's
metadata under :data:`METADATA_KEY`: every field, and the embedding bit for bit, comes back
as saved. Why facts: they belong to a user on every backend that has them and are read by
subject, or by subject and predicate (one record), newest first; a preference would reach
every prompt ``get_context`` builds.

CrewAI searches with a query *vector* made by its own embedder, which no memory-core search
takes: a search reads the user's records (one ``facts_about``) and ranks them here by the
cosine similarity of the embeddings (a negative one counts as 0), as deletes and the scope
and category listings read them and filter them here. That suits the hundreds or
thousands of memories a crew keeps; each call reads them all. Scopes match by path
(``/crew/a`` holds ``/crew/a/b``, not ``/crew/ab``).

Not supported: a backend without the ``facts`` capability (NAMS) raises
:class:`~memory_core.errors.NotSupportedError` when the storage is made, before anything
is read or written. ``touch_records`` is not offered, so a recall leaves ``last_accessed``
as it was (CrewAI ranks by ``created_at``).
"""

from __future__ import annotations

import base64
import hashlib
import math
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

from crewai.memory.types import MemoryRecord, ScopeInfo

from ..errors import InvalidArgumentTypeError, InvalidRequestError
from ..limits import Limits
from ..models import Fact
from ..sync import SyncMemoryBackend
from ..validation import check_identifier, check_int, check_json_value, check_str
from ..warning_channel import add_framework
from ._bridge import Memory, MemoryBridge, Plan

# The framework's frames call this module: capability warnings point past them.
add_framework("crewai")

__all__ = ["METADATA_KEY", "SUBJECT", "MemoryStorage"]

SUBJECT = "crewai_memory_record"
"""The subject of every fact that holds a record (one word no query or entity name uses)."""
METADATA_KEY = "crewai_record"
"""Fact metadata key holding the record: its fields as JSON and ``embedding`` packed."""

_EVERY = 2**31  # a limit above any real count: read them all
_NO_TEXT = "-"  # a fact's object must be text; this one has no word to match
_NO_FACTS = (
    "keep CrewAI memory on a backend with facts (memory://, sqlite://, postgresql://, "
    "bolt://); conversations can stay on this one"
)
_T = TypeVar("_T")


@dataclass(frozen=True)
class _Stored:
    """A record and the facts holding it, newest first (a save that failed between writing
    and deleting leaves two; the newest is the record)."""

    record: Any  # crewai's MemoryRecord
    facts: tuple[Fact, ...]


@dataclass(frozen=True)
class _Filter:
    """Which records a delete, count or listing means: all that match every given part."""

    scope: str | None = None  # a path: the records at it or under it
    categories: tuple[str, ...] | None = None  # any of them (CrewAI's [] is None)
    metadata: Mapping[str, Any] | None = None  # each key equal
    record_ids: frozenset[str] | None = None  # [] names none: nothing matches
    older_than: datetime | None = None  # created before, in UTC

    def matches(self, record: Any) -> bool:
        if not _under(record.scope, self.scope):
            return False
        if self.categories is not None and not set(self.categories) & set(record.categories):
            return False
        if self.metadata is not None and not all(
            k in record.metadata and record.metadata[k] == v for k, v in self.metadata.items()
        ):
            return False
        if self.record_ids is not None and record.id not in self.record_ids:
            return False
        return self.older_than is None or _utc(record.created_at) < self.older_than


class MemoryStorage:
    """A CrewAI ``StorageBackend`` over any backend with the ``facts`` capability, acting
    for one user: pass it as ``crewai.Memory(storage=MemoryStorage(...))``.

    ``memory``: a :class:`~memory_core.sync.SyncMemoryBackend` (what a crew needs: it calls
    the storage's sync methods from its own threads) or an async
    :class:`~memory_core.MemoryBackend` (the ``a…`` methods; sync ones only from a worker
    thread of its loop). ``user_identifier`` (required) owns every record the storage
    writes and is the only user whose records it reads, counts or deletes.
    """

    def __init__(self, memory: Memory, *, user_identifier: str) -> None:
        self._bridge = MemoryBridge(memory)
        self._limits = _limits_of(self._bridge.memory)
        self.user_identifier = check_identifier(
            user_identifier, "user_identifier", self._limits, plain=True
        )
        self._bridge.require("facts", "MemoryStorage", _NO_FACTS)

    # ------------------------------------------------------------ writes

    def save(self, records: list[Any]) -> None:
        """Store ``records``, each replacing a stored record of the same id; all are
        checked before the first is written."""
        self._bridge.drive(self._save_plan(self._facts_of(records, "records")))

    async def asave(self, records: list[Any]) -> None:
        """The async form of :meth:`save`."""
        await self._bridge.adrive(self._save_plan(self._facts_of(records, "records")))

    def update(self, record: Any) -> None:
        """Replace the stored record with ``record``'s id (store it when there is none)."""
        self._bridge.drive(self._save_plan(self._facts_of([record], "record", single=True)))

    def delete(
        self,
        scope_prefix: str | None = None,
        categories: list[str] | None = None,
        record_ids: list[str] | None = None,
        older_than: datetime | None = None,
        metadata_filter: dict[str, Any] | None = None,
    ) -> int:
        """Delete the records matching every criterion given (none: all of the user's)
        and return how many there were."""
        wanted = _filter(scope_prefix, categories, metadata_filter, record_ids, older_than)
        return self._bridge.drive(self._delete_plan(wanted))

    async def adelete(
        self,
        scope_prefix: str | None = None,
        categories: list[str] | None = None,
        record_ids: list[str] | None = None,
        older_than: datetime | None = None,
        metadata_filter: dict[str, Any] | None = None,
    ) -> int:
        """The async form of :meth:`delete`."""
        wanted = _filter(scope_prefix, categories, metadata_filter, record_ids, older_than)
        return await self._bridge.adrive(self._delete_plan(wanted))

    def reset(self, scope_prefix: str | None = None) -> None:
        """Delete the user's records at and under ``scope_prefix`` (``None``: all)."""
        self._bridge.drive(self._delete_plan(_Filter(scope=_scope(scope_prefix, "scope_prefix"))))

    # ------------------------------------------------------------ reads

    def search(
        self,
        query_embedding: list[float],
        scope_prefix: str | None = None,
        categories: list[str] | None = None,
        metadata_filter: dict[str, Any] | None = None,
        limit: int = 10,
        min_score: float = 0.0,
    ) -> list[tuple[Any, float]]:
        """The ``limit`` records most similar to ``query_embedding`` (cosine similarity,
        at least ``min_score``) among those matching the filters, best first."""
        plan = self._search_plan(
            query_embedding, scope_prefix, categories, metadata_filter, limit, min_score
        )
        return self._bridge.drive(plan)

    async def asearch(
        self,
        query_embedding: list[float],
        scope_prefix: str | None = None,
        categories: list[str] | None = None,
        metadata_filter: dict[str, Any] | None = None,
        limit: int = 10,
        min_score: float = 0.0,
    ) -> list[tuple[Any, float]]:
        """The async form of :meth:`search`."""
        plan = self._search_plan(
            query_embedding, scope_prefix, categories, metadata_filter, limit, min_score
        )
        return await self._bridge.adrive(plan)

    def get_record(self, record_id: str) -> Any | None:
        """The record with this id, or ``None``."""
        check_str(record_id, "record_id")
        found = self._bridge.drive(self._versions(record_id))
        return found.record if found else None

    def list_records(
        self, scope_prefix: str | None = None, limit: int = 200, offset: int = 0
    ) -> list[Any]:
        """The records at and under ``scope_prefix``, newest first, from ``offset``."""
        wanted = _Filter(scope=_scope(scope_prefix, "scope_prefix"))
        count = check_int(limit, "limit", minimum=0)
        skip = check_int(offset, "offset", minimum=0)
        records = _newest_first(self._matching(wanted))
        return records[skip : skip + count]

    def count(self, scope_prefix: str | None = None) -> int:
        """How many records are at and under ``scope_prefix`` (``None``: all)."""
        return len(self._matching(_Filter(scope=_scope(scope_prefix, "scope_prefix"))))

    def list_categories(self, scope_prefix: str | None = None) -> dict[str, int]:
        """Each category of the records at and under ``scope_prefix`` and how many hold it."""
        counts: dict[str, int] = {}
        for record in self._matching(_Filter(scope=_scope(scope_prefix, "scope_prefix"))):
            for category in dict.fromkeys(record.categories):
                counts[category] = counts.get(category, 0) + 1
        return counts

    def list_scopes(self, parent: str = "/") -> list[str]:
        """The scopes one level below ``parent`` that hold records (at or under them)."""
        path = _scope(check_str(parent, "parent"), "parent")
        return _children(path, self._matching(_Filter(scope=path)))

    def get_scope_info(self, scope: str) -> Any:
        """A ``ScopeInfo`` of ``scope``: its records (at and under it), their categories,
        the oldest and newest creation time, the scopes one level below."""
        path = _scope(check_str(scope, "scope"), "scope")
        records = self._matching(_Filter(scope=path))
        created = [r.created_at for r in records]
        return ScopeInfo(
            path=path or "/",
            record_count=len(records),
            categories=sorted({c for r in records for c in r.categories}),
            oldest_record=min(created, key=_utc) if created else None,
            newest_record=max(created, key=_utc) if created else None,
            child_scopes=_children(path, records),
        )

    # ------------------------------------------------------------ drivers

    def _matching(self, wanted: _Filter) -> list[Any]:
        return [s.record for s in self._bridge.drive(self._read_all()) if wanted.matches(s.record)]

    # ------------------------------------------------------------ checks

    def _facts_of(
        self, records: Any, argument: str, *, single: bool = False
    ) -> list[tuple[str, dict[str, Any]]]:
        """Each record's id and the ``add_fact`` arguments that store it."""
        if not single and (
            isinstance(records, str | bytes | Mapping) or not isinstance(records, Sequence)
        ):
            raise InvalidArgumentTypeError(
                f"must be a list of MemoryRecord, got {type(records).__name__}",
                argument=argument,
            )
        found = []
        for index, record in enumerate(records):
            at = argument if single else f"{argument}[{index}]"
            if not isinstance(record, MemoryRecord):
                raise InvalidArgumentTypeError(
                    f"must be a crewai MemoryRecord, got {type(record).__name__}", argument=at
                )
            found.append((record.id, self._fact(record, at)))
        return found

    def _fact(self, record: Any, at: str) -> dict[str, Any]:
        check_str(record.id, f"{at}.id", allow_empty=False)
        # What JSON cannot carry exactly is refused, not turned into text.
        check_json_value(record.metadata, f"{at}.metadata", self._limits)
        kept = record.model_dump(mode="json")
        kept["embedding"] = _pack(record.embedding, f"{at}.embedding")
        metadata = {METADATA_KEY: kept}
        check_json_value(metadata, at, self._limits)  # within the limits add_fact applies
        text = record.content if record.content.strip() else _NO_TEXT
        return {
            "subject": SUBJECT,
            "predicate": _predicate(record.id),
            "object": check_str(text, f"{at}.content", max_chars=self._limits.max_content_chars),
            "metadata": metadata,
            "user_identifier": self.user_identifier,
        }

    # ------------------------------------------------------------ plans

    def _read_all(self) -> Plan[list[_Stored]]:
        """Every record of the user, each once."""
        facts = yield (
            "facts_about",
            {"subject": SUBJECT, "limit": _EVERY, "user_identifier": self.user_identifier},
        )
        return _grouped(facts)

    def _versions(self, record_id: str) -> Plan[_Stored | None]:
        """The record with this id and every fact holding it."""
        facts = yield (
            "facts_about",
            {
                "subject": SUBJECT,
                "predicate": _predicate(record_id),
                "limit": _EVERY,
                "user_identifier": self.user_identifier,
            },
        )
        found = [s for s in _grouped(facts) if s.record.id == record_id]
        return found[0] if found else None

    def _save_plan(self, facts: list[tuple[str, dict[str, Any]]]) -> Plan[None]:
        for record_id, fact in facts:
            old = yield from self._versions(record_id)
            yield ("add_fact", fact)
            for stale in old.facts if old else ():
                yield (
                    "delete_fact",
                    {"fact_id": stale.id, "user_identifier": fact["user_identifier"]},
                )

    def _delete_plan(self, wanted: _Filter) -> Plan[int]:
        stored = yield from self._read_all()
        gone = [s for s in stored if wanted.matches(s.record)]
        for item in gone:
            for fact in item.facts:
                yield ("delete_fact", {"fact_id": fact.id, "user_identifier": self.user_identifier})
        return len(gone)

    def _search_plan(
        self,
        query_embedding: Any,
        scope_prefix: Any,
        categories: Any,
        metadata_filter: Any,
        limit: Any,
        min_score: Any,
    ) -> Plan[list[tuple[Any, float]]]:
        query = _vector(query_embedding)
        wanted = _filter(scope_prefix, categories, metadata_filter, None, None)
        count = check_int(limit, "limit", minimum=0)
        lowest = _number(min_score, "min_score")
        stored = yield from self._read_all()
        scored = []
        for record in _newest_first([s.record for s in stored if wanted.matches(s.record)]):
            if not record.embedding:
                continue  # saved without one: found by listings, never by similarity
            if len(record.embedding) != len(query):
                raise InvalidRequestError(
                    f"has {len(query)} dimensions; this user's memories were embedded with "
                    f"{len(record.embedding)}: search with the embedder that saved them, or "
                    "reset the memory (crew.reset_memories())",
                    argument="query_embedding",
                )
            score = _cosine(query, record.embedding)
            if score >= lowest:
                scored.append((record, score))
        scored.sort(key=lambda pair: pair[1], reverse=True)  # stable: newest first on ties
        return scored[:count]


# ---------------------------------------------------------------------- helpers


def _limits_of(memory: Memory) -> Limits:
    return memory.backend.limits if isinstance(memory, SyncMemoryBackend) else memory.limits


def _predicate(record_id: str) -> str:
    return hashlib.sha256(record_id.encode("utf-8")).hexdigest()


def _pack(embedding: Any, argument: str) -> str | None:
    """The embedding as base64 of little-endian doubles: exact, and a third of its JSON."""
    if embedding is None:
        return None
    try:
        raw = struct.pack(f"<{len(embedding)}d", *embedding)
    except (TypeError, struct.error):
        raise InvalidArgumentTypeError("must be a list of numbers", argument=argument) from None
    return base64.b64encode(raw).decode("ascii")


def _unpack(packed: Any) -> list[float] | None:
    if not isinstance(packed, str):
        return None
    raw = base64.b64decode(packed)
    return list(struct.unpack(f"<{len(raw) // 8}d", raw))


def _record_of(fact: Fact) -> Any | None:
    """The record a fact holds; ``None`` for one that holds none (another writer's)."""
    kept = fact.metadata.get(METADATA_KEY)
    if fact.subject != SUBJECT or not isinstance(kept, dict):
        return None
    try:
        return MemoryRecord.model_validate({**kept, "embedding": _unpack(kept.get("embedding"))})
    except ValueError:
        return None


def _grouped(facts: Iterable[Fact]) -> list[_Stored]:
    """The records the facts hold, each once with all its facts, the newest fact first."""
    by_id: dict[str, list[tuple[Fact, Any]]] = {}
    for fact in facts:
        record = _record_of(fact)
        if record is not None:
            by_id.setdefault(record.id, []).append((fact, record))
    found = []
    for versions in by_id.values():
        versions.sort(key=lambda pair: pair[0].created_at, reverse=True)
        found.append(_Stored(versions[0][1], tuple(fact for fact, _ in versions)))
    return found


def _newest_first(records: list[Any]) -> list[Any]:
    return sorted(records, key=lambda r: _utc(r.created_at), reverse=True)


def _utc(moment: datetime) -> datetime:
    """CrewAI keeps naive UTC times: compare every time as an aware one."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment


def _scope(value: Any, argument: str) -> str | None:
    """A scope path as ``/a/b`` (``None`` for the root: every record)."""
    if value is None:
        return None
    parts = [p for p in check_str(value, argument).split("/") if p]
    return "/" + "/".join(parts) if parts else None


def _under(scope: str, path: str | None) -> bool:
    if path is None:
        return True
    own = _scope(scope, "scope") or "/"
    return own == path or own.startswith(path + "/")


def _children(path: str | None, records: list[Any]) -> list[str]:
    base = path or ""
    found = set()
    for record in records:
        own = _scope(record.scope, "scope") or ""
        if own.startswith(base + "/"):
            found.add(f"{base}/{own[len(base) + 1 :].split('/')[0]}")
    return sorted(found)


def _filter(
    scope_prefix: Any, categories: Any, metadata_filter: Any, record_ids: Any, older_than: Any
) -> _Filter:
    if metadata_filter is not None and not isinstance(metadata_filter, Mapping):
        raise InvalidArgumentTypeError(
            f"must be a dict, got {type(metadata_filter).__name__}", argument="metadata_filter"
        )
    if older_than is not None and not isinstance(older_than, datetime):
        raise InvalidArgumentTypeError(
            f"must be a datetime, got {type(older_than).__name__}", argument="older_than"
        )
    ids = _strings(record_ids, "record_ids")
    return _Filter(
        scope=_scope(scope_prefix, "scope_prefix"),
        categories=_strings(categories, "categories") or None,  # none named: any
        metadata=metadata_filter,
        record_ids=None if ids is None else frozenset(ids),
        older_than=None if older_than is None else _utc(older_than),
    )


def _strings(value: Any, argument: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise InvalidArgumentTypeError(
            f"must be a list of str, got {type(value).__name__}", argument=argument
        )
    return tuple(check_str(item, argument) for item in value)


def _number(value: Any, argument: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidArgumentTypeError(
            f"must be a number, got {type(value).__name__}", argument=argument
        )
    return float(value)


def _vector(value: Any) -> list[float]:
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise InvalidArgumentTypeError(
            f"must be a list of numbers, got {type(value).__name__}", argument="query_embedding"
        )
    numbers = [_number(x, "query_embedding") for x in value]
    if not numbers or not all(map(math.isfinite, numbers)):
        raise InvalidRequestError(
            "must hold at least one number, all finite", argument="query_embedding"
        )
    return numbers


def _cosine(a: list[float], b: list[float]) -> float:
    """Cosine similarity, 0 where it is negative or a vector is all zeros."""
    dot = math.fsum(x * y for x, y in zip(a, b, strict=True))
    norms = math.sqrt(math.fsum(x * x for x in a)) * math.sqrt(math.fsum(y * y for y in b))
    return max(0.0, dot / norms) if norms else 0.0
