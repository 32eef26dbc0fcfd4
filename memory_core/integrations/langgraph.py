"""LangGraph: a ``BaseStore`` that keeps a graph's namespaced items in memory-core.

``pip install "memory-core[langgraph]"``::

    from langgraph.graph import StateGraph
    from memory_core.sync import open_backend
    from memory_core.integrations.langgraph import MemoryStore

    memory = open_backend("sqlite:///memory.db")  # or postgresql://…, bolt://…
    graph = builder.compile(store=MemoryStore(memory, user_identifier="ada"))

Mapping. Each item is one **fact of the store's user**: subject :data:`SUBJECT`,
predicate the SHA-256 of the item's namespace and key, object the item's searchable text,
and the exact namespace, key, value and creation time in the fact's metadata under
:data:`METADATA_KEY`. Why facts: they belong to a user on every backend (entities are
shared unless the backend is multi-tenant), ``facts_about(subject, predicate=…)`` is an
exact, indexed lookup newest first (get, overwrite and delete by key), ``facts_about``
of the subject lists every item of the user (namespace listing, search without a query)
and ``search_facts`` scores by words and, with an embedder, by meaning (search with a
query). Preferences would do all this too, but ``get_context`` puts a user's preferences
into every prompt; a fact only reaches the prompt when a message mentions an entity
named like its subject, and no entity is named :data:`SUBJECT`. ``forget_user`` erases
the items with the user's other records, and ``memory-core transfer`` moves them.

A put writes the new version, then deletes the versions it read before writing, so a
failure in between leaves two versions and every read takes the newest. Namespaces and
keys are hashed, never parsed: any label LangGraph allows (``/``, ``:``, spaces, any
Unicode) and any key round-trip exactly. Search and namespace listing read the user's
items and filter them here (namespace prefix, ``filter``, offset, limit).

Not supported: TTL (``ttl=``, a ``ttl_config`` default) raises
:class:`TTLNotSupportedError`, as no backend expires facts; ``refresh_ttl`` is accepted
and ignored, as LangGraph specifies for stores without TTL. The embedding model is the
backend's (``open_backend(url, embedder=…)``): ``index`` takes ``fields`` only. A
backend without the ``facts`` capability (NAMS) raises
:class:`~memory_core.errors.NotSupportedError` when the store is created.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, TypeVar, cast

from langgraph.store.base import (
    NOT_PROVIDED,
    BaseStore,
    GetOp,
    IndexConfig,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    NamespacePath,
    NotProvided,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    get_text_at_path,
)

from ..errors import InvalidArgumentTypeError, InvalidRequestError, NotSupportedError
from ..limits import Limits
from ..models import Fact
from ..sync import SyncMemoryBackend
from ..validation import check_bool, check_identifier, check_int, check_json_value, check_str
from ..warning_channel import add_framework
from ._bridge import Call, Memory, MemoryBridge, Plan

# The framework's frames call this module: capability warnings point past them.
add_framework("langgraph", "langchain_core")

__all__ = [
    "METADATA_KEY",
    "SUBJECT",
    "MemoryStore",
    "StoreNamespaceError",
    "TTLNotSupportedError",
]

SUBJECT = "langgraph_store_item"
"""The subject of every fact that holds an item (one word no query or entity name uses)."""
METADATA_KEY = "langgraph_item"
"""Fact metadata key holding ``{"namespace", "key", "value", "created_at"}``."""

_EVERY = 2**31  # a limit above any real count: read them all
_FIRST_ASK = 64
_UNINDEXED = "-"  # a fact's object must be text; this one has no word to match
_OPERATORS = frozenset({"$eq", "$ne", "$gt", "$gte", "$lt", "$lte"})
_ORDERED = frozenset({"$gt", "$gte", "$lt", "$lte"})
_NO_FACTS = (
    "keep LangGraph items on a backend with facts (memory://, sqlite://, postgresql://, "
    "bolt://); conversations can stay on this one"
)
_T = TypeVar("_T")


class StoreNamespaceError(InvalidRequestError, InvalidNamespaceError):
    """A namespace, prefix or suffix LangGraph does not allow (``argument`` names it).

    Both memory-core's ``InvalidRequestError`` and LangGraph's ``InvalidNamespaceError``,
    so code catching either keeps working."""


class TTLNotSupportedError(NotSupportedError, NotImplementedError):
    """``ttl`` was given: no backend expires LangGraph items. ``argument`` is ``"ttl"``.

    Also a ``NotImplementedError``, what ``BaseStore`` raises for TTL on a store without
    it."""

    argument = "ttl"


# ---------------------------------------------------------------------- requests


@dataclass(frozen=True)
class _Get:
    namespace: tuple[str, ...]
    key: str


@dataclass(frozen=True)
class _Put:
    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any] | None  # None: delete
    text: str | None  # None: not indexed


@dataclass(frozen=True)
class _Search:
    prefix: tuple[str, ...]
    filter: dict[str, Any]
    limit: int
    offset: int
    query: str | None


@dataclass(frozen=True)
class _List:
    conditions: tuple[tuple[bool, tuple[str, ...]], ...]  # (at the end?, path)
    max_depth: int | None
    limit: int
    offset: int


_Request = _Get | _Put | _Search | _List


@dataclass(frozen=True)
class _Stored:
    """An item as a fact holds it."""

    fact: Fact
    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    created_at: datetime

    def item(self, score: float | None, scored: bool) -> Item:
        if scored:
            return SearchItem(
                self.namespace, self.key, self.value, self.created_at, self.fact.created_at, score
            )
        return Item(
            value=self.value,
            key=self.key,
            namespace=self.namespace,
            created_at=self.created_at,
            updated_at=self.fact.created_at,
        )


# ---------------------------------------------------------------------- the store


class MemoryStore(BaseStore):
    """A LangGraph ``BaseStore`` over any backend with the ``facts`` capability, acting
    for one user.

    ``memory``: a :class:`~memory_core.sync.SyncMemoryBackend` (sync and async methods
    work) or an async :class:`~memory_core.MemoryBackend` (async methods; sync ones only
    from a worker thread of its loop). ``user_identifier`` (required) owns every item the
    store writes and is the only user whose items it reads. ``index``: LangGraph's
    ``IndexConfig`` with ``fields`` only (the JSON paths whose text search matches,
    ``["$"]``, the whole value, by default); embeddings come from the backend's embedder,
    so ``embed`` and ``dims`` raise ``NotSupportedError``.
    """

    def __init__(
        self, memory: Memory, *, user_identifier: str, index: IndexConfig | None = None
    ) -> None:
        self._bridge = MemoryBridge(memory)
        self._limits = _limits_of(self._bridge.memory)
        self.user_identifier = check_identifier(
            user_identifier, "user_identifier", self._limits, plain=True
        )
        self._fields = self._index_fields(index)
        self._bridge.require("facts", "MemoryStore", _NO_FACTS)

    def _index_fields(self, index: Any) -> list[str]:
        if index is None:
            return ["$"]
        if not isinstance(index, Mapping):
            raise InvalidArgumentTypeError(
                f"must be an IndexConfig dict, got {type(index).__name__}", argument="index"
            )
        if {"embed", "dims"} & set(index):
            raise NotSupportedError(
                self._bridge.name,
                "MemoryStore",
                "index: embed and dims are not used: embeddings come from the backend",
                "open the backend with embedder=… and pass index={'fields': [...]} only",
            )
        unknown = set(index) - {"fields"}
        if unknown:
            raise InvalidRequestError(f"unknown keys {sorted(unknown)}", argument="index")
        fields = index.get("fields")
        return ["$"] if fields is None else _paths(fields, "index")

    # ------------------------------------------------------------ the interface

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` one after another, in order (a get after a put sees it); every op
        is checked before the first runs, so a bad one runs none."""
        return [self._bridge.drive(self._plan(request)) for request in self._requests(ops)]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """The async form of :meth:`batch`."""
        return [await self._bridge.adrive(self._plan(request)) for request in self._requests(ops)]

    def get(
        self, namespace: tuple[str, ...], key: str, *, refresh_ttl: bool | None = None
    ) -> Item | None:
        """The item at ``namespace`` and ``key``, or ``None``."""
        request = self._get_request(GetOp(namespace, key, _refresh(refresh_ttl)), "")
        return cast(Item | None, self._bridge.drive(self._plan(request)))

    async def aget(
        self, namespace: tuple[str, ...], key: str, *, refresh_ttl: bool | None = None
    ) -> Item | None:
        """The async form of :meth:`get`."""
        request = self._get_request(GetOp(namespace, key, _refresh(refresh_ttl)), "")
        return cast(Item | None, await self._bridge.adrive(self._plan(request)))

    def put(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        index: Literal[False] | list[str] | None = None,
        *,
        ttl: float | NotProvided | None = NOT_PROVIDED,
    ) -> None:
        """Store ``value`` at ``namespace`` and ``key``, replacing what was there
        (``index``: the fields search matches, ``False``: none; ``ttl`` is refused)."""
        self._bridge.drive(
            self._plan(self._put_request(_put_op(namespace, key, value, index, ttl), ""))
        )

    async def aput(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        index: Literal[False] | list[str] | None = None,
        *,
        ttl: float | NotProvided | None = NOT_PROVIDED,
    ) -> None:
        """The async form of :meth:`put`."""
        request = self._put_request(_put_op(namespace, key, value, index, ttl), "")
        await self._bridge.adrive(self._plan(request))

    def delete(self, namespace: tuple[str, ...], key: str) -> None:
        """Delete the item at ``namespace`` and ``key`` (nothing there: nothing happens)."""
        self._bridge.drive(self._plan(self._put_request(PutOp(namespace, key, None), "")))

    async def adelete(self, namespace: tuple[str, ...], key: str) -> None:
        """The async form of :meth:`delete`."""
        await self._bridge.adrive(self._plan(self._put_request(PutOp(namespace, key, None), "")))

    def search(
        self,
        namespace_prefix: tuple[str, ...],
        /,
        *,
        query: str | None = None,
        filter: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        refresh_ttl: bool | None = None,
    ) -> list[SearchItem]:
        """Items under ``namespace_prefix`` whose value matches ``filter``: newest first,
        or with ``query`` best first (words, and meaning with an embedder), each scored."""
        op = SearchOp(namespace_prefix, filter, limit, offset, query, _refresh(refresh_ttl))
        return cast(list[SearchItem], self._bridge.drive(self._plan(self._search_request(op, ""))))

    async def asearch(
        self,
        namespace_prefix: tuple[str, ...],
        /,
        *,
        query: str | None = None,
        filter: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        refresh_ttl: bool | None = None,
    ) -> list[SearchItem]:
        """The async form of :meth:`search`."""
        op = SearchOp(namespace_prefix, filter, limit, offset, query, _refresh(refresh_ttl))
        found = await self._bridge.adrive(self._plan(self._search_request(op, "")))
        return cast(list[SearchItem], found)

    def list_namespaces(
        self,
        *,
        prefix: NamespacePath | None = None,
        suffix: NamespacePath | None = None,
        max_depth: int | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[tuple[str, ...]]:
        """The namespaces holding items, sorted, matching ``prefix`` and ``suffix``
        (``"*"`` matches any label), cut to ``max_depth`` labels, each once."""
        op = _list_op(prefix, suffix, max_depth, limit, offset)
        return cast(
            list[tuple[str, ...]], self._bridge.drive(self._plan(self._list_request(op, "")))
        )

    async def alist_namespaces(
        self,
        *,
        prefix: NamespacePath | None = None,
        suffix: NamespacePath | None = None,
        max_depth: int | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[tuple[str, ...]]:
        """The async form of :meth:`list_namespaces`."""
        op = _list_op(prefix, suffix, max_depth, limit, offset)
        found = await self._bridge.adrive(self._plan(self._list_request(op, "")))
        return cast(list[tuple[str, ...]], found)

    # ------------------------------------------------------------ drivers

    # ------------------------------------------------------------ checks

    def _requests(self, ops: Any) -> list[_Request]:
        if isinstance(ops, str | bytes | Mapping) or not isinstance(ops, Iterable):
            raise InvalidArgumentTypeError(
                f"must be an iterable of ops, got {type(ops).__name__}", argument="ops"
            )
        return [self._request(op, f"ops[{i}].") for i, op in enumerate(ops)]

    def _request(self, op: Any, at: str) -> _Request:
        if isinstance(op, GetOp):
            return self._get_request(op, at)
        if isinstance(op, PutOp):
            return self._put_request(op, at)
        if isinstance(op, SearchOp):
            return self._search_request(op, at)
        if isinstance(op, ListNamespacesOp):
            return self._list_request(op, at)
        raise InvalidArgumentTypeError(
            f"must be a GetOp, PutOp, SearchOp or ListNamespacesOp, got {type(op).__name__}",
            argument=at.rstrip("."),
        )

    def _get_request(self, op: GetOp, at: str) -> _Get:
        check_bool(op.refresh_ttl, f"{at}refresh_ttl")
        return _Get(_namespace(op.namespace, f"{at}namespace"), _key(op.key, f"{at}key"))

    def _put_request(self, op: PutOp, at: str) -> _Put:
        if op.ttl is not None:
            raise TTLNotSupportedError(
                self._bridge.name,
                "put",
                f"{at}ttl: items cannot expire (no backend expires facts)",
                "pass ttl=None and delete items yourself when they are no longer needed",
            )
        key = _key(op.key, f"{at}key")
        if op.value is None:
            return _Put(_namespace(op.namespace, f"{at}namespace"), key, None, None)
        namespace = _namespace(op.namespace, f"{at}namespace", writing=True)
        if not isinstance(op.value, Mapping):
            raise InvalidArgumentTypeError(
                f"must be a dict, got {type(op.value).__name__}", argument=f"{at}value"
            )
        value = check_json_value(op.value, f"{at}value", self._limits)
        # The whole record is what the store keeps: its size is the value's to answer for.
        check_json_value(_record(namespace, key, value, _LONGEST_TIME), f"{at}value", self._limits)
        text = self._text(value, op.index, at)
        return _Put(namespace, key, value, text)

    def _text(self, value: dict[str, Any], index: Any, at: str) -> str | None:
        if index is False:
            return None
        fields = self._fields if index is None else _paths(index, f"{at}index")
        texts = [text for path in fields for text in get_text_at_path(value, path)]
        text = "\n".join(t for t in texts if t.strip())
        if not text:
            return None
        return check_str(text, f"{at}value", max_chars=self._limits.max_content_chars)

    def _search_request(self, op: SearchOp, at: str) -> _Search:
        check_bool(op.refresh_ttl, f"{at}refresh_ttl")
        query = op.query
        if query is not None:
            query = check_str(query, f"{at}query", max_chars=self._limits.max_query_chars)
        return _Search(
            prefix=_namespace(op.namespace_prefix, f"{at}namespace_prefix"),
            filter=_filter(op.filter, f"{at}filter", self._limits),
            limit=check_int(op.limit, f"{at}limit", minimum=0),
            offset=check_int(op.offset, f"{at}offset", minimum=0),
            query=query if query and query.strip() else None,
        )

    def _list_request(self, op: ListNamespacesOp, at: str) -> _List:
        conditions = op.match_conditions or ()
        if not isinstance(conditions, Sequence):
            raise InvalidArgumentTypeError(
                "must be a tuple of MatchCondition", argument=f"{at}match_conditions"
            )
        depth = op.max_depth
        return _List(
            conditions=tuple(_condition(c, f"{at}match_conditions") for c in conditions),
            max_depth=None if depth is None else check_int(depth, f"{at}max_depth", minimum=1),
            limit=check_int(op.limit, f"{at}limit", minimum=0),
            offset=check_int(op.offset, f"{at}offset", minimum=0),
        )

    # ------------------------------------------------------------ plans

    def _plan(self, request: _Request) -> Plan[Result]:
        if isinstance(request, _Get):
            return self._get_plan(request)
        if isinstance(request, _Put):
            return self._put_plan(request)
        if isinstance(request, _Search):
            return self._search_plan(request)
        return self._list_plan(request)

    def _versions(self, namespace: tuple[str, ...], key: str) -> Plan[list[_Stored]]:
        """The stored versions of one item, newest first."""
        facts = yield (
            "facts_about",
            {
                "subject": SUBJECT,
                "predicate": _predicate(namespace, key),
                "limit": _EVERY,
                "user_identifier": self.user_identifier,
            },
        )
        found = (_stored(fact) for fact in facts)
        return [s for s in found if s and s.namespace == namespace and s.key == key]

    def _get_plan(self, request: _Get) -> Plan[Result]:
        versions = yield from self._versions(request.namespace, request.key)
        return versions[0].item(None, scored=False) if versions else None

    def _put_plan(self, request: _Put) -> Plan[Result]:
        versions = yield from self._versions(request.namespace, request.key)
        if request.value is not None:
            created = versions[0].created_at if versions else None
            yield ("add_fact", self._fact(request, request.value, created))
        for old in versions:
            yield (
                "delete_fact",
                {"fact_id": old.fact.id, "user_identifier": self.user_identifier},
            )
        return None

    def _fact(
        self, request: _Put, value: dict[str, Any], created: datetime | None
    ) -> dict[str, Any]:
        return {
            "subject": SUBJECT,
            "predicate": _predicate(request.namespace, request.key),
            "object": request.text or _UNINDEXED,
            "metadata": _record(request.namespace, request.key, value, created),
            "user_identifier": self.user_identifier,
            "generate_embedding": request.text is not None,
        }

    def _search_plan(self, request: _Search) -> Plan[Result]:
        wanted = request.offset + request.limit
        if request.limit == 0:
            return []
        ask = max(2 * wanted, _FIRST_ASK)
        while True:
            facts = yield self._search_call(request.query, ask)
            found = [s for s in _newest(facts) if _selected(s, request)]
            if len(found) >= wanted or len(facts) < ask:
                page = found[request.offset : wanted]
                return [s.item(s.fact.score, scored=True) for s in page]
            ask *= 4

    def _search_call(self, query: str | None, limit: int) -> Call:
        user = self.user_identifier
        if query is None:
            return ("facts_about", {"subject": SUBJECT, "limit": limit, "user_identifier": user})
        return ("search_facts", {"query": query, "limit": limit, "user_identifier": user})

    def _list_plan(self, request: _List) -> Plan[Result]:
        facts = yield self._search_call(None, _EVERY)
        names = {s.namespace for s in (_stored(f) for f in facts) if s}
        kept = {
            ns[: request.max_depth] if request.max_depth else ns
            for ns in names
            if all(_fits(ns, path, at_end) for at_end, path in request.conditions)
        }
        return sorted(kept)[request.offset : request.offset + request.limit]


# ---------------------------------------------------------------------- helpers

# The longest ISO form a creation time takes (microseconds and an offset), for the size check.
_LONGEST_TIME = datetime.fromisoformat("2000-01-01T00:00:00.000001+00:00")


def _limits_of(memory: Memory) -> Limits:
    return memory.backend.limits if isinstance(memory, SyncMemoryBackend) else memory.limits


def _refresh(refresh_ttl: bool | None) -> bool:
    return True if refresh_ttl is None else refresh_ttl


def _put_op(
    namespace: Any, key: Any, value: Any, index: Any, ttl: float | NotProvided | None
) -> PutOp:
    if value is None:  # put() stores; None would delete, which is delete()'s
        raise InvalidArgumentTypeError("must be a dict, got NoneType", argument="value")
    return PutOp(namespace, key, value, index, None if isinstance(ttl, NotProvided) else ttl)


def _list_op(prefix: Any, suffix: Any, max_depth: Any, limit: Any, offset: Any) -> ListNamespacesOp:
    conditions = []
    if prefix:
        _namespace(prefix, "prefix")
        conditions.append(MatchCondition("prefix", tuple(prefix)))
    if suffix:
        _namespace(suffix, "suffix")
        conditions.append(MatchCondition("suffix", tuple(suffix)))
    return ListNamespacesOp(tuple(conditions), max_depth, limit, offset)


def _namespace(value: Any, argument: str, *, writing: bool = False) -> tuple[str, ...]:
    """A namespace LangGraph allows: a tuple of labels, each a non-empty ``str`` with no
    ``.`` and no NUL; one written to is not empty and not under ``langgraph``."""
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise StoreNamespaceError(
            f"must be a tuple of str, got {type(value).__name__}", argument=argument
        )
    labels = tuple(value)
    for label in labels:
        if not isinstance(label, str):
            raise StoreNamespaceError(
                f"labels must be str, got {type(label).__name__}", argument=argument
            )
        if not label or "." in label or "\x00" in label:
            raise StoreNamespaceError(
                f"label {label!r}: labels are non-empty, without '.' or NUL", argument=argument
            )
        check_str(label, argument)
    if writing and not labels:
        raise StoreNamespaceError("must not be empty", argument=argument)
    if writing and labels[0] == "langgraph":
        raise StoreNamespaceError("must not start with 'langgraph' (reserved)", argument=argument)
    return labels


def _key(value: Any, argument: str) -> str:
    text = check_str(value, argument)
    if "\x00" in text:
        raise InvalidRequestError("must not contain NUL", argument=argument)
    return text


def _paths(value: Any, argument: str) -> list[str]:
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise InvalidArgumentTypeError(
            f"must be a list of field paths, got {type(value).__name__}", argument=argument
        )
    return [check_str(path, argument, allow_empty=False) for path in value]


def _condition(value: Any, argument: str) -> tuple[bool, tuple[str, ...]]:
    if not isinstance(value, MatchCondition) or value.match_type not in ("prefix", "suffix"):
        raise InvalidRequestError(
            "must hold MatchCondition('prefix' or 'suffix', path)", argument=argument
        )
    return value.match_type == "suffix", _namespace(value.path, argument)


def _filter(value: Any, argument: str, limits: Limits) -> dict[str, Any]:
    """``None`` or ``{field: value, or {operator: value}}`` with LangGraph's operators."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidArgumentTypeError(
            f"must be a dict, got {type(value).__name__}", argument=argument
        )
    plain: dict[str, Any] = check_json_value(value, argument, limits)
    for field, wanted in plain.items():
        if isinstance(wanted, dict) and any(k.startswith("$") for k in wanted):
            for operator, operand in wanted.items():
                _check_operator(operator, operand, f"{argument}[{field!r}]")
    return plain


def _check_operator(operator: str, operand: Any, argument: str) -> None:
    if operator not in _OPERATORS:
        raise InvalidRequestError(
            f"{operator!r} is not one of {', '.join(sorted(_OPERATORS))}", argument=argument
        )
    if operator in _ORDERED and not (_number(operand) or isinstance(operand, str)):
        raise InvalidRequestError(
            f"{operator} compares numbers or strings, got {type(operand).__name__}",
            argument=argument,
        )


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _equal(actual: Any, wanted: Any) -> bool:
    """JSON equality (``true`` is not ``1``); a dict matches when each key it names does."""
    if isinstance(wanted, dict):
        return isinstance(actual, dict) and all(
            k in actual and _equal(actual[k], v) for k, v in wanted.items()
        )
    if isinstance(wanted, list):
        return (
            isinstance(actual, list)
            and len(actual) == len(wanted)
            and all(map(_equal, actual, wanted))
        )
    if _number(wanted):
        return _number(actual) and bool(actual == wanted)
    return type(actual) is type(wanted) and bool(actual == wanted)


def _compare(actual: Any, operator: str, operand: Any) -> bool:
    if operator == "$eq":
        return _equal(actual, operand)
    if operator == "$ne":
        return not _equal(actual, operand)
    comparable = (_number(actual) and _number(operand)) or (
        isinstance(actual, str) and isinstance(operand, str)
    )
    if not comparable:
        return False
    if operator == "$gt":
        return bool(actual > operand)
    if operator == "$gte":
        return bool(actual >= operand)
    if operator == "$lt":
        return bool(actual < operand)
    return bool(actual <= operand)


_MISSING = object()


def _matches(value: dict[str, Any], filter: dict[str, Any]) -> bool:
    for field, wanted in filter.items():
        actual = value.get(field, _MISSING)
        if isinstance(wanted, dict) and any(k.startswith("$") for k in wanted):
            if not all(_compare(actual, op, operand) for op, operand in wanted.items()):
                return False
        elif actual is _MISSING or not _equal(actual, wanted):
            return False
    return True


def _fits(namespace: tuple[str, ...], path: tuple[str, ...], at_end: bool) -> bool:
    if len(path) > len(namespace):
        return False
    part = namespace[len(namespace) - len(path) :] if at_end else namespace[: len(path)]
    return all(want in ("*", label) for label, want in zip(part, path, strict=True))


def _selected(stored: _Stored, request: _Search) -> bool:
    return stored.namespace[: len(request.prefix)] == request.prefix and _matches(
        stored.value, request.filter
    )


def _predicate(namespace: tuple[str, ...], key: str) -> str:
    exact = json.dumps([list(namespace), key], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(exact.encode("utf-8")).hexdigest()


def _record(
    namespace: tuple[str, ...], key: str, value: dict[str, Any], created: datetime | None
) -> dict[str, Any]:
    when = None if created is None else created.isoformat()
    return {
        METADATA_KEY: {"namespace": list(namespace), "key": key, "value": value, "created_at": when}
    }


def _stored(fact: Fact) -> _Stored | None:
    """The item a fact holds; ``None`` for a fact that holds none (another writer's)."""
    raw = fact.metadata.get(METADATA_KEY)
    if fact.subject != SUBJECT or not isinstance(raw, dict):
        return None
    namespace, key, value = raw.get("namespace"), raw.get("key"), raw.get("value")
    if not (isinstance(namespace, list) and all(isinstance(n, str) for n in namespace)):
        return None
    if not isinstance(key, str) or not isinstance(value, dict):
        return None
    created = raw.get("created_at")
    try:
        first = datetime.fromisoformat(created) if isinstance(created, str) else fact.created_at
    except ValueError:
        first = fact.created_at
    return _Stored(fact, tuple(namespace), key, value, first)


def _newest(facts: Iterable[Fact]) -> list[_Stored]:
    """The items the facts hold, in the facts' order, each once: where a put left two
    versions (it failed between writing and deleting), the newer one's at the first place."""
    slots: dict[tuple[tuple[str, ...], str], _Stored] = {}
    for stored in filter(None, map(_stored, facts)):
        where = (stored.namespace, stored.key)
        seen = slots.get(where)
        if seen is None or stored.fact.created_at > seen.fact.created_at:
            slots[where] = stored
    return list(slots.values())
