"""The LangGraph store (``memory_core.integrations.langgraph.MemoryStore``) on every
backend with facts (embedded, Bolt, PostgreSQL), its refusal on NAMS, and the shape of
LangGraph's ``BaseStore`` it implements."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

import anyio
import anyio.to_thread
import pytest

pytest.importorskip("langgraph.store.base", reason="extra 'langgraph' not installed")

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    SearchItem,
    SearchOp,
)

from memory_core import open_backend
from memory_core.errors import (
    ConfigurationError,
    InvalidArgumentTypeError,
    InvalidRequestError,
    NotSupportedError,
)
from memory_core.integrations.langgraph import (
    METADATA_KEY,
    SUBJECT,
    MemoryStore,
    StoreNamespaceError,
    TTLNotSupportedError,
)
from memory_core.sync import open_backend as open_blocking
from memory_core_dev.sync_stores import STORE_KINDS, SyncStore

ON_FACT_BACKENDS = pytest.mark.parametrize(
    "sync_store", [p for p in STORE_KINDS if p.values != ("nams",)], indirect=True
)
ON_NAMS = pytest.mark.parametrize(
    "sync_store", [p for p in STORE_KINDS if p.values == ("nams",)], indirect=True
)


class Stores:
    """Stores for users of one test (unique per test: Bolt and PostgreSQL are shared by
    the run); every item they wrote is removed afterwards."""

    def __init__(self, backend: SyncStore) -> None:
        self.backend = backend
        self.users: list[str] = []

    def user(self, name: str = "ada") -> MemoryStore:
        user = f"lg-{name}-{self.backend.tag}"
        self.users.append(user)
        return MemoryStore(self.backend.memory, user_identifier=user)

    def facts(self, store: MemoryStore) -> list[Any]:
        return list(
            self.backend.memory.facts_about(
                SUBJECT, limit=10_000, user_identifier=store.user_identifier
            )
        )

    def clean(self) -> None:
        memory = self.backend.memory
        for user in self.users:
            for fact in memory.facts_about(SUBJECT, limit=10_000, user_identifier=user):
                memory.delete_fact(fact.id, user_identifier=user)


@pytest.fixture(name="stores")
def stores_fixture(sync_store: SyncStore) -> Iterator[Stores]:
    stores = Stores(sync_store)
    try:
        yield stores
    finally:
        stores.clean()


def _keys(items: list[SearchItem]) -> list[tuple[tuple[str, ...], str]]:
    return [(item.namespace, item.key) for item in items]


# ---------------------------------------------------------------- get / put / delete

# Labels that look like separators of a joined path: none may collide with another.
AWKWARD_NAMESPACES = [
    ("a", "b"),
    ("a/b",),
    ("a:b",),
    ("a", "b", "c"),
    ("a|b", "c"),
    ("ä ö", "日本", "*", "x\ny", '"q"', "\\"),
]
AWKWARD_KEYS = ["k", "b/k", "", "k.with.dots", "with space", "日本/🙂", "a:b|c"]


@ON_FACT_BACKENDS
def test_namespaces_keys_and_values_round_trip_exactly(stores: Stores) -> None:
    store = stores.user()
    value = {
        "text": "likes pizza",
        "n": 3,
        "f": 0.5,
        "big": 2**53 + 1,
        "flag": True,
        "none": None,
        "nested": {"list": [1, "two", {"three": [3.25]}], "empty": {}},
        "unicode": "ünï 🙂",
    }
    written = {}
    for i, namespace in enumerate(AWKWARD_NAMESPACES):
        for key in AWKWARD_KEYS:
            written[(namespace, key)] = {**value, "i": i, "key": key}
    store.batch([PutOp(ns, key, v) for (ns, key), v in written.items()])
    for (namespace, key), expected in written.items():
        item = store.get(namespace, key)
        assert item is not None, (namespace, key)
        assert (item.namespace, item.key, item.value) == (namespace, key, expected)
    assert store.get(("a",), "b/k") is None  # ("a","b") + "k" is not ("a",) + "b/k"
    assert store.get(("a", "b", "c", "d"), "k") is None
    assert sorted(store.list_namespaces(limit=100)) == sorted(AWKWARD_NAMESPACES)


@ON_FACT_BACKENDS
def test_a_put_overwrites_keeps_created_at_and_leaves_one_record(stores: Stores) -> None:
    store = stores.user()
    store.put(("prefs",), "food", {"likes": "pizza"})
    first = store.get(("prefs",), "food")
    store.put(("prefs",), "food", {"likes": "pasta"})
    second = store.get(("prefs",), "food")
    assert first is not None and second is not None
    assert second.value == {"likes": "pasta"}
    assert second.created_at == first.created_at
    assert second.updated_at >= first.updated_at
    assert isinstance(second.created_at, datetime) and second.created_at.tzinfo is not None
    assert len(stores.facts(store)) == 1


@ON_FACT_BACKENDS
def test_delete_removes_only_that_item_and_a_missing_one_is_a_no_op(stores: Stores) -> None:
    store = stores.user()
    store.put(("n",), "a", {"v": 1})
    store.put(("n",), "b", {"v": 2})
    store.delete(("n",), "a")
    store.delete(("n",), "never-written")
    assert store.get(("n",), "a") is None
    assert store.get(("n",), "b") is not None
    assert [f.predicate for f in stores.facts(store)] != []
    assert len(stores.facts(store)) == 1


@ON_FACT_BACKENDS
def test_reads_take_the_newest_version_and_a_put_removes_every_older_one(
    stores: Stores,
) -> None:
    """A put that failed between writing and deleting leaves two versions."""
    store = stores.user()
    store.put(("n",), "k", {"v": "old"})
    [old] = stores.facts(store)
    stores.backend.memory.add_fact(
        SUBJECT,
        old.predicate,
        "-",
        metadata={METADATA_KEY: {**old.metadata[METADATA_KEY], "value": {"v": "new"}}},
        user_identifier=store.user_identifier,
    )
    got = store.get(("n",), "k")
    assert got is not None and got.value == {"v": "new"}
    assert [i.value for i in store.search(("n",))] == [{"v": "new"}]
    store.put(("n",), "k", {"v": "newest"})
    assert [f.metadata[METADATA_KEY]["value"] for f in stores.facts(store)] == [{"v": "newest"}]


@ON_FACT_BACKENDS
def test_facts_that_hold_no_item_are_ignored(stores: Stores) -> None:
    store = stores.user()
    memory, user = stores.backend.memory, store.user_identifier
    memory.add_fact(SUBJECT, "x", "no item here", user_identifier=user)
    memory.add_fact("Ada", "LIKES", "pizza", user_identifier=user)
    store.put(("n",), "k", {"text": "pizza"})
    assert _keys(store.search(())) == [(("n",), "k")]
    assert _keys(store.search((), query="pizza")) == [(("n",), "k")]
    assert store.list_namespaces() == [("n",)]


# ---------------------------------------------------------------- search


def _catalogue(store: MemoryStore) -> None:
    store.batch(
        [
            PutOp(("docs", "a"), "1", {"kind": "report", "score": 1, "tags": ["x"], "ok": True}),
            PutOp(("docs", "a"), "2", {"kind": "memo", "score": 2.5, "meta": {"lang": "en"}}),
            PutOp(("docs", "b"), "3", {"kind": "report", "score": 4, "ok": 1, "date": "2024-05"}),
            PutOp(("docsx",), "4", {"kind": "report", "score": 5}),
            PutOp(("other",), "5", {"kind": "report", "score": 9, "date": "2023-01"}),
        ]
    )


FILTERS: list[tuple[dict[str, Any], set[str]]] = [
    ({"kind": "report"}, {"1", "3"}),
    ({"kind": {"$eq": "memo"}}, {"2"}),
    ({"kind": {"$ne": "report"}}, {"2"}),
    ({"score": {"$gt": 2.5}}, {"3"}),
    ({"score": {"$gte": 2.5}}, {"2", "3"}),
    ({"score": {"$lt": 2.5}}, {"1"}),
    ({"score": {"$lte": 2.5}}, {"1", "2"}),
    ({"score": {"$gt": 1, "$lt": 4}}, {"2"}),
    ({"kind": "report", "score": {"$gte": 4}}, {"3"}),
    ({"ok": True}, {"1"}),  # JSON equality: true is not 1
    ({"ok": 1}, {"3"}),
    ({"tags": ["x"]}, {"1"}),
    ({"meta": {"lang": "en"}}, {"2"}),
    ({"missing": {"$ne": "x"}}, {"1", "2", "3"}),
    ({"missing": None}, set()),
    ({"date": {"$gte": "2024-01"}}, {"3"}),
    ({"kind": {"$gt": 3}}, set()),  # a string is not compared with a number
]


@ON_FACT_BACKENDS
def test_search_filters_under_a_namespace_prefix(stores: Stores) -> None:
    store = stores.user()
    _catalogue(store)
    assert {i.key for i in store.search(("docs",))} == {"1", "2", "3"}
    assert {i.key for i in store.search(())} == {"1", "2", "3", "4", "5"}
    assert {i.key for i in store.search(("docs", "b"))} == {"3"}
    for wanted, keys in FILTERS:
        assert {i.key for i in store.search(("docs",), filter=wanted)} == keys, wanted


@ON_FACT_BACKENDS
def test_search_pages_newest_first_with_limit_and_offset(stores: Stores) -> None:
    store = stores.user()
    for i in range(7):
        store.put(("page",), f"k{i}", {"i": i})
    pages = [store.search(("page",), limit=3, offset=start) for start in (0, 3, 6, 9)]
    assert [[i.key for i in page] for page in pages] == [
        ["k6", "k5", "k4"],
        ["k3", "k2", "k1"],
        ["k0"],
        [],
    ]
    assert all(isinstance(i, SearchItem) and i.score is None for i in pages[0])
    assert store.search(("page",), limit=0) == []
    store.put(("page",), "k0", {"i": 0, "again": True})  # an update is the newest
    assert store.search(("page",), limit=1)[0].key == "k0"
    assert [i.key for i in store.search(("page",), filter={"i": {"$lt": 2}})] == ["k0", "k1"]


@ON_FACT_BACKENDS
def test_search_beyond_the_first_read_still_finds_every_match(stores: Stores) -> None:
    """The store reads more when filtering leaves too few (its first read is 64 records)."""
    store = stores.user()
    store.batch([PutOp(("wide",), f"k{i:03}", {"fifth": i % 5 == 0}) for i in range(150)])
    page = store.search(("wide",), filter={"fifth": True}, limit=20, offset=5)
    assert [i.key for i in page] == [f"k{i:03}" for i in range(120, -1, -5)][:20]
    assert len(store.search(("wide",), filter={"fifth": True}, limit=100)) == 30


@ON_FACT_BACKENDS
def test_search_with_a_query_matches_words_best_first_with_scores(stores: Stores) -> None:
    store = stores.user()
    store.put(("mem",), "1", {"text": "Ada likes spicy pizza", "kind": "food"})
    store.put(("mem",), "2", {"text": "Ada works at Acme", "kind": "job"})
    store.put(("mem",), "3", {"text": "pizza pizza pizza", "kind": "food"})
    store.put(("elsewhere",), "4", {"text": "pizza"})
    store.put(("mem",), "5", {"text": "pizza", "secret": "x"}, index=False)
    hits = store.search(("mem",), query="pizza")
    assert {i.key for i in hits} == {"1", "3"}
    assert all(i.score is not None and 0 < i.score <= 1 for i in hits)
    assert [i.score for i in hits] == sorted((i.score for i in hits), reverse=True)
    assert [i.key for i in store.search(("mem",), query="pizza", filter={"kind": "job"})] == []
    assert [i.key for i in store.search(("mem",), query="acme")] == ["2"]
    assert {i.key for i in store.search(("mem",), filter={"secret": "x"})} == {"5"}
    store.put(("mem",), "6", {"title": "tea", "body": "pizza"}, index=["title"])
    assert [i.key for i in store.search(("mem",), query="tea")] == ["6"]
    assert "6" not in {i.key for i in store.search(("mem",), query="pizza")}


def test_index_fields_choose_the_searched_text_and_embeddings_are_the_backends() -> None:
    with open_blocking("memory://") as memory:
        store = MemoryStore(memory, user_identifier="ada", index={"fields": ["title"]})
        store.put(("n",), "1", {"title": "tea", "body": "pizza"})
        assert [i.key for i in store.search(("n",), query="tea")] == ["1"]
        assert store.search(("n",), query="pizza") == []
        with pytest.raises(NotSupportedError, match="embedder"):
            MemoryStore(memory, user_identifier="ada", index={"dims": 3, "embed": "x:y"})
        with pytest.raises(InvalidRequestError) as bad:
            MemoryStore(memory, user_identifier="ada", index={"field": ["x"]})  # type: ignore[arg-type]
        assert bad.value.argument == "index"


class _Meaning:
    """A toy embedder: "car" and "automobile" mean the same, "banana" something else."""

    dimensions = 3

    async def embed(self, texts: list[str]) -> list[list[float]]:
        def one(text: str) -> list[float]:
            lowered = text.lower()
            return [
                1.0 if "car" in lowered or "automobile" in lowered else 0.0,
                1.0 if "banana" in lowered else 0.0,
                0.1,
            ]

        return [one(text) for text in texts]


def test_a_query_finds_by_meaning_when_the_backend_has_an_embedder() -> None:
    with open_blocking("memory://", embedder=_Meaning()) as memory:
        store = MemoryStore(memory, user_identifier="ada")
        store.put(("n",), "car", {"text": "my car is red"})
        store.put(("n",), "fruit", {"text": "a banana"})
        hits = store.search(("n",), query="automobile", limit=1)
        assert [i.key for i in hits] == ["car"]


# ---------------------------------------------------------------- namespaces

TREE = [
    ("a", "b", "c"),
    ("a", "b", "d", "e"),
    ("a", "b", "d", "i"),
    ("a", "b", "f"),
    ("a", "c", "f"),
]


@ON_FACT_BACKENDS
def test_list_namespaces_with_prefix_suffix_wildcards_depth_and_pages(stores: Stores) -> None:
    store = stores.user()
    store.batch([PutOp(ns, "k", {"v": 1}) for ns in TREE] + [PutOp(TREE[0], "k2", {"v": 2})])
    assert store.list_namespaces() == sorted(TREE)
    assert store.list_namespaces(prefix=("a", "b"), max_depth=3) == [
        ("a", "b", "c"),
        ("a", "b", "d"),
        ("a", "b", "f"),
    ]
    assert store.list_namespaces(suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(suffix=("d", "*")) == [("a", "b", "d", "e"), ("a", "b", "d", "i")]
    assert store.list_namespaces(prefix=("a", "b"), suffix=("f",)) == [("a", "b", "f")]
    assert store.list_namespaces(max_depth=1) == [("a",)]
    assert store.list_namespaces(prefix=("b",)) == []
    assert store.list_namespaces(prefix=("a", "b", "c", "x")) == []
    assert store.list_namespaces(limit=2, offset=1) == sorted(TREE)[1:3]
    op = ListNamespacesOp((MatchCondition("prefix", ("a", "c")),), None, 10, 0)
    assert store.batch([op]) == [[("a", "c", "f")]]


# ---------------------------------------------------------------- batch and async


@ON_FACT_BACKENDS
def test_a_batch_of_mixed_ops_runs_in_order_and_answers_in_order(stores: Stores) -> None:
    store = stores.user()
    ns = ("batch",)
    results = store.batch(
        [
            GetOp(ns, "k"),
            PutOp(ns, "k", {"v": 1}),
            GetOp(ns, "k"),
            PutOp(ns, "j", {"v": 2}),
            SearchOp(ns, {"v": {"$gte": 1}}, 10, 0),
            ListNamespacesOp(None, None, 10, 0),
            PutOp(ns, "k", None),
            GetOp(ns, "k"),
        ]
    )
    assert len(results) == 8
    assert results[0] is None and results[1] is None and results[3] is None
    assert isinstance(results[2], Item) and results[2].value == {"v": 1}
    assert [i.key for i in results[4]] == ["j", "k"]  # type: ignore[union-attr]
    assert results[5] == [ns]
    assert results[6] is None and results[7] is None


@ON_FACT_BACKENDS
def test_every_async_form_with_a_blocking_backend(stores: Stores) -> None:
    store = stores.user()

    async def main() -> None:
        await store.aput(("x", "y"), "k", {"text": "async pizza", "n": 1})
        got = await store.aget(("x", "y"), "k")
        assert got is not None and got.value["n"] == 1
        assert _keys(await store.asearch(("x",), filter={"n": 1})) == [(("x", "y"), "k")]
        assert _keys(await store.asearch(("x",), query="pizza")) == [(("x", "y"), "k")]
        assert await store.alist_namespaces(prefix=("x",)) == [("x", "y")]
        batch = await store.abatch([GetOp(("x", "y"), "k"), PutOp(("x", "y"), "k", None)])
        assert isinstance(batch[0], Item) and batch[1] is None
        await store.aput(("x", "y"), "k2", {"n": 2})
        await store.adelete(("x", "y"), "k2")
        assert await store.aget(("x", "y"), "k2") is None
        assert await store.alist_namespaces() == []

    anyio.run(main)


def test_an_async_backend_serves_async_methods_and_sync_ones_from_a_worker_thread() -> None:
    async def main() -> None:
        async with open_backend("memory://") as memory:
            store = MemoryStore(memory, user_identifier="ada")
            await store.aput(("n",), "k", {"v": 1})
            got = await anyio.to_thread.run_sync(store.get, ("n",), "k")
            assert got is not None and got.value == {"v": 1}
            with pytest.raises(ConfigurationError, match="worker thread"):
                store.get(("n",), "k")

    anyio.run(main)


def test_a_langgraph_graph_reads_and_writes_the_store_sync_and_async() -> None:
    pytest.importorskip("langgraph.graph", reason="langgraph not installed")
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph
    from langgraph.runtime import Runtime

    class State(TypedDict):
        name: str
        visits: int

    def count(state: State, runtime: Runtime[None]) -> dict[str, int]:
        assert runtime.store is not None
        seen = runtime.store.get(("visits",), state["name"])
        visits = 1 + (seen.value["count"] if seen else 0)
        runtime.store.put(("visits",), state["name"], {"count": visits})
        return {"visits": visits}

    async def acount(state: State, runtime: Runtime[None]) -> dict[str, int]:
        assert runtime.store is not None
        seen = await runtime.store.aget(("visits",), state["name"])
        visits = 1 + (seen.value["count"] if seen else 0)
        await runtime.store.aput(("visits",), state["name"], {"count": visits})
        return {"visits": visits}

    with open_blocking("memory://") as memory:
        store = MemoryStore(memory, user_identifier="ada")
        for node in (count, acount):
            builder = StateGraph(State)
            builder.add_node("count", node)
            builder.add_edge(START, "count")
            builder.add_edge("count", END)
            graph = builder.compile(store=store)
            if node is count:
                assert graph.invoke({"name": "Ana", "visits": 0})["visits"] == 1
            else:
                done = anyio.run(graph.ainvoke, {"name": "Ana", "visits": 0})
                assert done["visits"] == 2
        got = store.get(("visits",), "Ana")
        assert got is not None and got.value == {"count": 2}


# ---------------------------------------------------------------- users


@ON_FACT_BACKENDS
def test_two_users_never_see_each_others_items(stores: Stores) -> None:
    ada, bob = stores.user("ada"), stores.user("bob")
    ada.put(("shared",), "k", {"who": "ada", "text": "pizza"})
    bob.put(("shared",), "k", {"who": "bob", "text": "pizza"})
    bob.put(("bob-only",), "k", {"who": "bob"})
    got = ada.get(("shared",), "k")
    assert got is not None and got.value["who"] == "ada"
    assert [i.value["who"] for i in ada.search(())] == ["ada"]
    assert [i.value["who"] for i in ada.search((), query="pizza")] == ["ada"]
    assert ada.list_namespaces() == [("shared",)]
    ada.delete(("shared",), "k")
    after = bob.get(("shared",), "k")
    assert after is not None and after.value["who"] == "bob"
    assert bob.list_namespaces() == [("bob-only",), ("shared",)]


def test_the_user_is_required_and_checked() -> None:
    with open_blocking("memory://") as memory:
        with pytest.raises(TypeError):
            MemoryStore(memory)  # type: ignore[call-arg]
        for bad in (None, "", "a\nb", 3):
            with pytest.raises(InvalidRequestError) as caught:
                MemoryStore(memory, user_identifier=bad)  # type: ignore[arg-type]
            assert caught.value.argument == "user_identifier"
        with pytest.raises(InvalidArgumentTypeError) as wrong:
            MemoryStore("memory://", user_identifier="ada")  # type: ignore[arg-type]
        assert wrong.value.argument == "memory"


# ---------------------------------------------------------------- refusals and bad input


@ON_NAMS
def test_nams_refuses_the_store_before_anything_is_read_or_written(sync_store: SyncStore) -> None:
    memory = sync_store.memory
    assert not memory.capabilities.facts
    with pytest.raises(NotSupportedError) as refused:
        MemoryStore(memory, user_identifier=f"lg-{sync_store.tag}")
    assert refused.value.backend == "nams" and "'facts'" in refused.value.message
    assert "postgresql://" in refused.value.workaround


@ON_FACT_BACKENDS
def test_ttl_is_refused_naming_it_and_nothing_is_written(stores: Stores) -> None:
    store = stores.user()
    for attempt in (
        lambda: store.put(("n",), "k", {"v": 1}, ttl=5),
        lambda: store.batch([PutOp(("n",), "a", {"v": 1}), PutOp(("n",), "k", {"v": 1}, ttl=1.5)]),
        lambda: anyio.run(lambda: store.aput(("n",), "k", {"v": 1}, ttl=0.5)),
    ):
        with pytest.raises(TTLNotSupportedError) as refused:
            attempt()
        assert isinstance(refused.value, NotSupportedError)
        assert isinstance(refused.value, NotImplementedError)  # what BaseStore raises
        assert refused.value.argument == "ttl" and "ttl" in str(refused.value)
    assert stores.facts(store) == []
    store.put(("n",), "k", {"v": 1}, ttl=None)
    assert store.get(("n",), "k", refresh_ttl=True) is not None  # accepted and ignored
    assert store.search(("n",), refresh_ttl=False) != []
    assert not store.supports_ttl


def _big(store: MemoryStore) -> dict[str, str]:
    return {"text": "x" * 70_000}


NS, TYPE, BAD = StoreNamespaceError, InvalidArgumentTypeError, InvalidRequestError
ODD_MATCH = ListNamespacesOp((MatchCondition("middle", ("a",)),))  # type: ignore[arg-type]
BAD_CALLS: list[tuple[str, Callable[[Any], Any], type[Exception], str]] = [
    ("dot", lambda s: s.put(("a.b",), "k", {}), NS, "namespace"),
    ("empty label", lambda s: s.put(("a", ""), "k", {}), NS, "namespace"),
    ("nul label", lambda s: s.put(("a\x00",), "k", {}), NS, "namespace"),
    ("empty ns", lambda s: s.put((), "k", {}), NS, "namespace"),
    ("reserved", lambda s: s.put(("langgraph", "x"), "k", {}), NS, "namespace"),
    ("str ns", lambda s: s.put("abc", "k", {}), NS, "namespace"),
    ("int label", lambda s: s.get(("a", 1), "k"), NS, "namespace"),
    ("int key", lambda s: s.put(("a",), 1, {}), TYPE, "key"),
    ("nul key", lambda s: s.put(("a",), "k\x00", {}), BAD, "key"),
    ("surrogate key", lambda s: s.put(("a",), "\ud800", {}), BAD, "key"),
    ("list value", lambda s: s.put(("a",), "k", [1]), TYPE, "value"),
    ("none value", lambda s: s.put(("a",), "k", None), TYPE, "value"),
    ("set in value", lambda s: s.put(("a",), "k", {"s": {1}}), BAD, "value"),
    ("int dict key", lambda s: s.put(("a",), "k", {1: "x"}), BAD, "value"),
    ("too big", lambda s: s.put(("a",), "k", _big(s)), BAD, "value"),
    ("bad index", lambda s: s.put(("a",), "k", {}, index="text"), TYPE, "index"),
    ("bad filter", lambda s: s.search(("a",), filter=[1]), TYPE, "filter"),
    ("operator", lambda s: s.search(("a",), filter={"x": {"$in": [1]}}), BAD, "filter['x']"),
    ("mixed", lambda s: s.search(("a",), filter={"x": {"$gt": 1, "y": 2}}), BAD, "filter['x']"),
    ("operand", lambda s: s.search(("a",), filter={"x": {"$gt": [1]}}), BAD, "filter['x']"),
    ("limit", lambda s: s.search(("a",), limit=-1), BAD, "limit"),
    ("offset", lambda s: s.search(("a",), offset="1"), TYPE, "offset"),
    ("query", lambda s: s.search(("a",), query=3), TYPE, "query"),
    ("prefix", lambda s: s.search(("a.b",)), NS, "namespace_prefix"),
    ("ls prefix", lambda s: s.list_namespaces(prefix=("a.b",)), NS, "prefix"),
    ("ls suffix", lambda s: s.list_namespaces(suffix=("",)), NS, "suffix"),
    ("max_depth", lambda s: s.list_namespaces(max_depth=0), BAD, "max_depth"),
    ("ls limit", lambda s: s.list_namespaces(limit=True), TYPE, "limit"),
    ("refresh", lambda s: s.get(("a",), "k", refresh_ttl="yes"), TYPE, "refresh_ttl"),
    ("not an op", lambda s: s.batch([GetOp(("a",), "k"), "get"]), TYPE, "ops[1]"),
    ("ops", lambda s: s.batch("ops"), TYPE, "ops"),
    ("match", lambda s: s.batch([ODD_MATCH]), BAD, "ops[0].match_conditions"),
]


@ON_FACT_BACKENDS
def test_bad_input_raises_a_typed_error_naming_the_argument_and_writes_nothing(
    stores: Stores,
) -> None:
    store = stores.user()
    for name, call, kind, argument in BAD_CALLS:
        with pytest.raises(kind) as caught:
            call(store)
        assert caught.value.argument == argument, name  # type: ignore[attr-defined]
    with pytest.raises(InvalidNamespaceError):  # LangGraph's own type still catches it
        store.put(("a.b",), "k", {})
    with pytest.raises(StoreNamespaceError) as late:  # the last op is bad: none runs
        store.batch([PutOp(("n",), "k", {"v": 1}), PutOp(("n",), "j", None), GetOp(("x.y",), "k")])
    assert late.value.argument == "ops[2].namespace"
    assert stores.facts(store) == []


# ---------------------------------------------------------------- the interface we implement

PUBLIC = {
    "batch",
    "abatch",
    "get",
    "aget",
    "put",
    "aput",
    "delete",
    "adelete",
    "search",
    "asearch",
    "list_namespaces",
    "alist_namespaces",
}


def _shape(func: Any) -> list[tuple[str, Any, Any]]:
    return [(p.name, p.kind, p.default) for p in inspect.signature(func).parameters.values()]


def test_langgraphs_base_store_has_the_shape_this_store_implements() -> None:
    """Fails when LangGraph changes ``BaseStore``: a new abstract or public method, an op
    with other fields, a method with other parameters. Then the store needs a look."""
    assert BaseStore.__abstractmethods__ == frozenset({"batch", "abatch"})
    public = {n for n in vars(BaseStore) if not n.startswith("_") and callable(vars(BaseStore)[n])}
    assert public == PUBLIC
    assert typing.get_args(Op) == (GetOp, SearchOp, PutOp, ListNamespacesOp)
    assert GetOp._fields == ("namespace", "key", "refresh_ttl")
    assert PutOp._fields == ("namespace", "key", "value", "index", "ttl")
    assert SearchOp._fields == (
        "namespace_prefix",
        "filter",
        "limit",
        "offset",
        "query",
        "refresh_ttl",
    )
    assert ListNamespacesOp._fields == ("match_conditions", "max_depth", "limit", "offset")
    assert MatchCondition._fields == ("match_type", "path")
    assert [p.name for p in inspect.signature(SearchItem).parameters.values()] == [
        "namespace",
        "key",
        "value",
        "created_at",
        "updated_at",
        "score",
    ]
    for name in PUBLIC:
        assert name in vars(MemoryStore), name  # every method is ours, none inherited
        assert _shape(getattr(MemoryStore, name)) == _shape(getattr(BaseStore, name)), name
    assert MemoryStore.supports_ttl is False and MemoryStore.ttl_config is None


def test_the_installed_langgraph_ships_no_store_contract_tests() -> None:
    """Checked when this file was written: no langgraph distribution installs tests for
    stores (LangGraph's own store tests live in its repository only). If one appears,
    run it against MemoryStore here."""
    from importlib.metadata import distributions

    shipped = [
        str(path)
        for dist in distributions()
        if (dist.metadata["Name"] or "").lower().startswith("langgraph")
        for path in dist.files or ()
        if "test" in str(path).lower()
    ]
    assert shipped == []


def test_the_example_run_twice_prints_the_same_and_leaves_no_item(tmp_path: Any) -> None:
    pytest.importorskip("langgraph.graph", reason="langgraph not installed")
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    url = f"sqlite:///{tmp_path / 'memory.db'}"
    outputs = []
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, str(root / "examples" / "frameworks" / "langgraph_store.py"), url],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        outputs.append(done.stdout.splitlines()[:2])
        with open_blocking(url) as memory:
            assert memory.facts_about(SUBJECT, user_identifier="langgraph-demo") == []
    assert outputs[0] == outputs[1] == ["Hello Ana, visit 1.", "Hello Ana, visit 2."]


def test_forget_user_erases_the_items_and_a_copy_moves_them() -> None:
    from memory_core.transfer import copy_memory

    async def main() -> None:
        async with open_backend("memory://") as source, open_backend("memory://") as target:
            ada = MemoryStore(source, user_identifier="ada")
            await ada.aput(("a", "b/c"), "k", {"text": "pizza", "n": 1})
            await ada.aput(("a", "b/c"), "k", {"text": "pizza", "n": 2})
            before = await ada.aget(("a", "b/c"), "k")
            await MemoryStore(source, user_identifier="bob").aput(("a",), "k", {"n": 3})
            await copy_memory(source, target)
            moved = await MemoryStore(target, user_identifier="ada").aget(("a", "b/c"), "k")
            assert before is not None and moved is not None
            assert (moved.value, moved.created_at) == (before.value, before.created_at)
            assert (await source.forget_user("ada")).counts["facts"] == 1
            assert await ada.aget(("a", "b/c"), "k") is None
            assert await ada.alist_namespaces() == []
            bob = await MemoryStore(source, user_identifier="bob").aget(("a",), "k")
            assert bob is not None and bob.value == {"n": 3}

    anyio.run(main)


def test_items_stay_out_of_get_context_where_a_preference_would_show() -> None:
    with open_blocking("memory://") as memory:
        memory.add_message("s", "user", "I met Ada about pizza", user_identifier="ada")
        MemoryStore(memory, user_identifier="ada").put(("notes",), "k", {"text": "zebra pizza"})
        context = memory.get_context("pizza", session_id="s", user_identifier="ada")
        assert "I met Ada" in context and "zebra" not in context
        memory.add_preference("food", "zebra cake", user_identifier="ada")
        assert "zebra" in memory.get_context("pizza", session_id="s", user_identifier="ada")
