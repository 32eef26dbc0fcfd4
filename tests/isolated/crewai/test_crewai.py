"""The CrewAI memory storage on the stores that keep facts (embedded, PostgreSQL) and its
refusal on NAMS: records round-trip exactly, search ranks by CrewAI's vectors with every
filter, deletes and listings, two users kept apart, the async methods, bad input, real
crews with a scripted model, crewai's own Memory API, the example, and the shape of the
storage interface the integration implements (run by ``scripts/test_isolated crewai``).
"""

from __future__ import annotations

import hashlib
import inspect
import json
import math
import os
import re
import runpy
import socket
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import anyio.to_thread
import pytest
from crewai import Agent, Crew, Memory, Task
from crewai.llms.base_llm import BaseLLM
from crewai.memory.storage.backend import StorageBackend
from crewai.memory.types import MemoryRecord, ScopeInfo
from crewai.utilities.i18n import I18N_DEFAULT
from pydantic import Field

from memory_core import (
    ConfigurationError,
    InvalidRequestError,
    NotSupportedError,
    open_backend,
)
from memory_core.integrations.crewai import METADATA_KEY, SUBJECT, MemoryStorage
from memory_core.sync import SyncMemoryBackend
from memory_core.sync import open_backend as open_sync
from memory_core_dev.sync_stores import SyncStore

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "frameworks" / "crewai_memory.py"
T0 = datetime(2026, 1, 2, 3, 4, 5, 678901)  # CrewAI's times are naive UTC
PROMPTS = {
    key: I18N_DEFAULT.memory(f"{key}_system")
    for key in ("extract_memories", "save", "query", "consolidation")
}


# ---------------------------------------------------------------------- helpers


@pytest.fixture
def storages(crew_store: SyncStore) -> Iterator[list[MemoryStorage]]:
    """The storages a test makes: each one's records are deleted afterwards."""
    made: list[MemoryStorage] = []
    yield made
    for storage in made:
        storage.reset()


def _storage(store: SyncStore, made: list[MemoryStorage], name: str = "ana") -> MemoryStorage:
    storage = MemoryStorage(store.memory, user_identifier=f"{name}-{store.tag}")
    made.append(storage)
    return storage


def _facts(memory: SyncMemoryBackend, storage: MemoryStorage) -> list[Any]:
    return memory.facts_about(SUBJECT, limit=1000, user_identifier=storage.user_identifier)


def _record(name: str, **fields: Any) -> MemoryRecord:
    fields.setdefault("content", f"memory {name}")
    fields.setdefault("created_at", T0)
    fields.setdefault("last_accessed", T0)
    return MemoryRecord(id=name, **fields)


def _whole(record: MemoryRecord) -> dict[str, Any]:
    """Every field, the embedding too (``model_dump`` leaves it out)."""
    return {**record.model_dump(), "embedding": record.embedding}


def _set() -> list[MemoryRecord]:
    """Records at several scopes, of several categories, with and without a vector, one
    a minute: d first, then a, b, c, e, f."""
    at = {name: T0 + timedelta(minutes=n) for n, name in enumerate("dabcef")}
    return [
        _record("d", scope="/", embedding=[-1.0, 0.0, 0.0], created_at=at["d"]),
        _record(
            "a",
            scope="/crew/a",
            categories=["x"],
            metadata={"k": 1},
            embedding=[1.0, 0.0, 0.0],
            created_at=at["a"],
        ),
        _record(
            "b", scope="/crew/a/b", categories=["y"], embedding=[0.9, 0.1, 0.0], created_at=at["b"]
        ),
        _record(
            "c",
            scope="/crew/ab",
            categories=["x", "y"],
            embedding=[2.0, 0.0, 0.0],
            created_at=at["c"],
        ),
        _record("e", scope="/crew/a", embedding=None, created_at=at["e"]),
        _record("f", scope="/crew/a", embedding=[0.0, 1.0, 0.0], created_at=at["f"]),
    ]


def _ids(found: list[Any]) -> list[str]:
    return [(item[0] if isinstance(item, tuple) else item).id for item in found]


def embed(texts: list[str]) -> list[list[float]]:
    """Stands in for an embedding model: each word counts in one of 16 dimensions."""
    vectors = []
    for text in texts:
        vector = [0.0] * 16
        for word in re.findall(r"\w+", text.lower()):
            vector[hashlib.sha256(word.encode()).digest()[0] % 16] += 1.0
        vectors.append(vector)
    return vectors


# ---------------------------------------------------------------------- records


def test_records_round_trip_exactly(crew_store: SyncStore, storages: list[MemoryStorage]) -> None:
    storage = _storage(crew_store, storages)
    sent = [
        MemoryRecord(
            id="r-1",
            content="Ana flies to Lisbon ✈ on 3 May",
            scope="/crew/trips/agent/planner",
            categories=["travel", "dates"],
            metadata={"entities": ["Ana", "Lisbon"], "n": [1, 2.5, True, None], "d": {"ü": ""}},
            importance=0.37,
            created_at=T0,
            last_accessed=T0 + timedelta(seconds=1),
            embedding=[0.1, -2.5e-300, 1 / 3, 0.0, 1e300, -0.0],
            source="user:ana",
            private=True,
        ),
        MemoryRecord(id="r-2", content="   ", created_at=T0 - timedelta(days=1)),
    ]
    storage.save(sent)
    back = {r.id: r for r in storage.list_records()}
    assert {k: _whole(v) for k, v in back.items()} == {r.id: _whole(r) for r in sent}
    assert [math.copysign(1, x) for x in back["r-1"].embedding or []][-1] == -1  # -0.0 kept
    assert _whole(storage.get_record("r-1")) == _whole(sent[0])
    assert storage.get_record("nope") is None
    [fact] = [f for f in _facts(crew_store.memory, storage) if f.object != "-"]
    assert (fact.subject, fact.object) == (SUBJECT, "Ana flies to Lisbon ✈ on 3 May")
    assert fact.predicate == hashlib.sha256(b"r-1").hexdigest()
    assert fact.metadata[METADATA_KEY]["scope"] == "/crew/trips/agent/planner"
    # a new storage object (a new process) reads the same
    again = MemoryStorage(crew_store.open(), user_identifier=storage.user_identifier)
    assert _whole(again.get_record("r-1")) == _whole(sent[0])


def test_a_full_size_embedding_fits_and_comes_back_bit_for_bit(
    crew_store: SyncStore, storages: list[MemoryStorage]
) -> None:
    storage = _storage(crew_store, storages)
    vector = [math.sin(n) / (n + 1) for n in range(3072)]  # text-embedding-3-large's size
    storage.save([_record("big", content="x" * 20_000, embedding=vector)])
    back = storage.get_record("big")
    assert back.embedding == vector and back.content == "x" * 20_000
    assert [r.id for r, _ in storage.search(vector)] == ["big"]


def test_save_and_update_replace_the_record_of_the_same_id(
    crew_store: SyncStore, storages: list[MemoryStorage]
) -> None:
    storage = _storage(crew_store, storages)
    storage.save([_record("r", embedding=[1.0, 0.0])])
    storage.save([_record("r", content="second", embedding=[0.0, 1.0])])
    assert [(r.id, r.content) for r in storage.list_records()] == [("r", "second")]
    storage.update(_record("r", content="third", importance=0.9))
    storage.update(_record("new", content="stored by update"))
    assert sorted((r.id, r.content, r.importance) for r in storage.list_records()) == [
        ("new", "stored by update", 0.5),
        ("r", "third", 0.9),
    ]
    assert len(_facts(crew_store.memory, storage)) == 2  # one fact per record


def test_two_versions_left_by_a_failed_save_read_as_the_newest(
    crew_store: SyncStore, storages: list[MemoryStorage]
) -> None:
    storage = _storage(crew_store, storages)
    user = storage.user_identifier
    for content in ("old", "new"):  # as a save that stopped before deleting the old one
        kept = {**_record("r", content=content).model_dump(mode="json"), "embedding": None}
        crew_store.memory.add_fact(
            SUBJECT,
            hashlib.sha256(b"r").hexdigest(),
            content,
            metadata={METADATA_KEY: kept},
            user_identifier=user,
        )
    assert [r.content for r in storage.list_records()] == ["new"]
    assert storage.get_record("r").content == "new"
    assert storage.count() == 1
    assert storage.delete(record_ids=["r"]) == 1
    assert _facts(crew_store.memory, storage) == []  # both versions gone


def test_other_writers_facts_are_left_alone(
    crew_store: SyncStore, storages: list[MemoryStorage]
) -> None:
    storage = _storage(crew_store, storages)
    user = storage.user_identifier
    memory = crew_store.memory
    memory.add_fact(
        SUBJECT, "p", "not a record", metadata={METADATA_KEY: {"id": 5}}, user_identifier=user
    )
    memory.add_fact(SUBJECT, "q", "no metadata", user_identifier=user)
    memory.add_fact("Ana", "LIKES", "tea", user_identifier=user)
    # a record under the predicate of id "r" that says it is another record
    elsewhere = {**_record("other").model_dump(mode="json"), "embedding": None}
    predicate = hashlib.sha256(b"r").hexdigest()
    memory.add_fact(
        SUBJECT, predicate, "x", metadata={METADATA_KEY: elsewhere}, user_identifier=user
    )
    assert storage.get_record("r") is None
    storage.save([_record("r", embedding=[1.0])])
    assert sorted(_ids(storage.list_records())) == ["other", "r"]  # saving r kept it
    assert storage.get_record("r").content == "memory r"
    assert storage.delete(record_ids=["other"]) == 1
    assert _ids(storage.search([1.0])) == ["r"]
    assert storage.count() == 1
    storage.reset()
    assert len(_facts(memory, storage)) == 2  # the two that hold no record
    assert [f.object for f in memory.facts_about("Ana", user_identifier=user)] == ["tea"]


# ---------------------------------------------------------------------- search


def test_search_ranks_by_cosine_similarity_newest_first_on_ties(
    crew_store: SyncStore, storages: list[MemoryStorage]
) -> None:
    storage = _storage(crew_store, storages)
    storage.save(_set())
    found = storage.search([1.0, 0.0, 0.0])
    assert _ids(found) == ["c", "a", "b", "f", "d"]  # e has no vector: never found
    scores = [score for _, score in found]
    assert scores == pytest.approx([1.0, 1.0, 0.9 / math.sqrt(0.82), 0.0, 0.0])
    assert scores[3:] == [0.0, 0.0]  # orthogonal, and opposite (negative: 0)
    assert _ids(storage.search([1.0, 0.0, 0.0], limit=2)) == ["c", "a"]
    assert storage.search([1.0, 0.0, 0.0], limit=0) == []
    assert _ids(storage.search([1.0, 0.0, 0.0], min_score=0.995)) == ["c", "a"]
    assert _ids(storage.search([0.0, 0.0, 1.0], min_score=0.01)) == []


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({"scope_prefix": "/crew/a"}, ["a", "b", "f"]),  # by path: not /crew/ab
        ({"scope_prefix": "crew/a/"}, ["a", "b", "f"]),
        ({"scope_prefix": "/"}, ["c", "a", "b", "f", "d"]),
        ({"scope_prefix": "/crew/a/b"}, ["b"]),
        ({"scope_prefix": "/elsewhere"}, []),
        ({"categories": ["y"]}, ["c", "b"]),  # any of them
        ({"categories": ["x", "y"]}, ["c", "a", "b"]),
        ({"categories": []}, ["c", "a", "b", "f", "d"]),  # none named: CrewAI's "any"
        ({"metadata_filter": {"k": 1}}, ["a"]),
        ({"metadata_filter": {"k": 2}}, []),
        ({"scope_prefix": "/crew", "categories": ["x"]}, ["c", "a"]),
    ],
)
def test_search_filters(
    filters: dict[str, Any],
    expected: list[str],
    crew_store: SyncStore,
    storages: list[MemoryStorage],
) -> None:
    storage = _storage(crew_store, storages)
    storage.save(_set())
    assert _ids(storage.search([1.0, 0.0, 0.0], **filters)) == expected


def test_a_query_of_another_dimension_is_refused(
    crew_store: SyncStore, storages: list[MemoryStorage]
) -> None:
    storage = _storage(crew_store, storages)
    assert storage.search([1.0, 0.0]) == []  # nothing stored: nothing to compare
    storage.save([_record("r", embedding=[1.0, 0.0, 0.0])])
    with pytest.raises(InvalidRequestError) as refused:
        storage.search([1.0, 0.0])
    assert refused.value.argument == "query_embedding"
    assert "embedded with 3" in str(refused.value)


# ---------------------------------------------------------------------- deletes


LATER = T0 + timedelta(minutes=3)  # c's time
PLUS_2 = timezone(timedelta(hours=2))


@pytest.mark.parametrize(
    ("criteria", "gone"),
    [
        ({}, {"a", "b", "c", "d", "e", "f"}),
        ({"scope_prefix": "/crew/a"}, {"a", "b", "e", "f"}),
        ({"scope_prefix": "/"}, {"a", "b", "c", "d", "e", "f"}),
        ({"categories": ["y"]}, {"b", "c"}),
        ({"record_ids": ["a", "unknown"]}, {"a"}),
        ({"record_ids": []}, set()),  # no id: nothing, not everything
        ({"categories": []}, {"a", "b", "c", "d", "e", "f"}),
        ({"older_than": LATER}, {"d", "a", "b"}),
        ({"older_than": LATER.replace(tzinfo=UTC)}, {"d", "a", "b"}),
        (
            {"older_than": (LATER + timedelta(minutes=1)).replace(tzinfo=UTC).astimezone(PLUS_2)},
            {"d", "a", "b", "c"},
        ),
        ({"metadata_filter": {"k": 1}}, {"a"}),
        ({"scope_prefix": "/crew", "categories": ["x"], "older_than": LATER}, {"a"}),
    ],
)
def test_delete_removes_what_matches_every_criterion(
    criteria: dict[str, Any],
    gone: set[str],
    crew_store: SyncStore,
    storages: list[MemoryStorage],
) -> None:
    storage = _storage(crew_store, storages)
    records = _set()
    storage.save(records)
    assert storage.delete(**criteria) == len(gone)
    assert set(_ids(storage.list_records())) == {r.id for r in records} - gone
    assert len(_facts(crew_store.memory, storage)) == 6 - len(gone)


def test_reset_removes_a_scope_or_everything(
    crew_store: SyncStore, storages: list[MemoryStorage]
) -> None:
    storage = _storage(crew_store, storages)
    storage.save(_set())
    storage.reset("/crew/a/")
    assert sorted(_ids(storage.list_records())) == ["c", "d"]
    storage.reset()
    assert storage.list_records() == [] and _facts(crew_store.memory, storage) == []


# ---------------------------------------------------------------------- listings


def test_listings_counts_scopes_and_categories(
    crew_store: SyncStore, storages: list[MemoryStorage]
) -> None:
    storage = _storage(crew_store, storages)
    records = _set()
    storage.save(records)
    assert _ids(storage.list_records()) == ["f", "e", "c", "b", "a", "d"]  # newest first
    assert _ids(storage.list_records(limit=2, offset=1)) == ["e", "c"]
    assert _ids(storage.list_records("/crew/a")) == ["f", "e", "b", "a"]
    assert storage.list_records(limit=0) == []
    assert storage.list_records(offset=6) == []
    assert (storage.count(), storage.count("/crew/a"), storage.count("/none")) == (6, 4, 0)
    assert storage.list_categories() == {"x": 2, "y": 2}
    assert storage.list_categories("/crew/a") == {"x": 1, "y": 1}
    assert storage.list_scopes() == ["/crew"]  # d, at the root itself, is no child
    assert storage.list_scopes("/crew") == ["/crew/a", "/crew/ab"]
    assert storage.list_scopes("crew/a/") == ["/crew/a/b"]
    assert storage.list_scopes("/crew/a/b") == []
    info = storage.get_scope_info("/crew/a/")
    assert info == ScopeInfo(
        path="/crew/a",
        record_count=4,
        categories=["x", "y"],
        oldest_record=T0 + timedelta(minutes=1),
        newest_record=T0 + timedelta(minutes=5),
        child_scopes=["/crew/a/b"],
    )
    root = storage.get_scope_info("/")
    assert (root.path, root.record_count, root.child_scopes) == ("/", 6, ["/crew"])
    assert (root.oldest_record, root.newest_record) == (T0, T0 + timedelta(minutes=5))
    assert storage.get_scope_info("/none") == ScopeInfo(path="/none")


# ---------------------------------------------------------------------- two users


@pytest.mark.parametrize("tenancy", ["single", "multi_tenant"])
def test_two_users_never_see_each_others_records(
    tenancy: str, crew_store: SyncStore, storages: list[MemoryStorage]
) -> None:
    memory = crew_store.memory if tenancy == "single" else crew_store.open(multi_tenant=True)
    alice = MemoryStorage(memory, user_identifier=f"alice-{crew_store.tag}")
    bob = MemoryStorage(memory, user_identifier=f"bob-{crew_store.tag}")
    storages.extend([alice, bob])
    alice.save([_record("same-id", content="alice's", scope="/s", embedding=[1.0, 0.0])])
    bob.save([_record("same-id", content="bob's", scope="/s", embedding=[1.0, 0.0])])
    bob.save([_record("bob-only", scope="/t", categories=["b"], embedding=[0.0, 1.0])])
    assert [r.content for r in alice.list_records()] == ["alice's"]
    assert [r.content for r, _ in alice.search([1.0, 1.0])] == ["alice's"]
    assert alice.get_record("bob-only") is None
    assert (alice.count(), alice.list_scopes(), alice.list_categories()) == (1, ["/s"], {})
    assert alice.delete(record_ids=["bob-only"]) == 0
    alice.reset()
    assert alice.count() == 0
    assert sorted(r.content for r in bob.list_records()) == ["bob's", "memory bob-only"]


# ---------------------------------------------------------------------- async


@pytest.mark.anyio
async def test_an_async_backend_serves_the_async_methods(crew_store: SyncStore) -> None:
    async with open_backend(crew_store.url, **crew_store.options) as memory:
        storage = MemoryStorage(memory, user_identifier=f"async-{crew_store.tag}")
        try:
            await storage.asave(
                [_record("r", embedding=[1.0, 0.0]), _record("s", embedding=[0.0, 1.0])]
            )
            found = await storage.asearch([1.0, 0.1], limit=1)
            assert [(r.id, round(score, 3)) for r, score in found] == [("r", 0.995)]
            # a sync method works from a worker thread of the backend's loop …
            assert await anyio.to_thread.run_sync(storage.count) == 2
            # … not on the loop's own thread
            with pytest.raises(ConfigurationError, match="worker thread"):
                storage.count()
            assert await storage.adelete(record_ids=["r"]) == 1
            assert await storage.adelete() == 1
        finally:
            await anyio.to_thread.run_sync(storage.reset)


# ---------------------------------------------------------------------- refusals


def test_nams_refuses_the_storage_before_any_request(
    nams_store: SyncStore, nams_server: Any
) -> None:
    mark = nams_server.mark()
    with pytest.raises(NotSupportedError) as refused:
        MemoryStorage(nams_store.memory, user_identifier="ana")
    assert (refused.value.backend, refused.value.method) == ("nams", "MemoryStorage")
    assert "'facts'" in refused.value.message
    assert "postgresql://" in refused.value.workaround
    assert nams_server.since(mark) == []  # nothing read or written


BAD_CALLS: list[tuple[str, tuple[Any, ...], dict[str, Any], str]] = [
    ("save", ("x",), {}, "records"),
    ("save", (None,), {}, "records"),
    ("save", ({"id": "r"},), {}, "records"),
    ("save", ([_record("ok"), "not a record"],), {}, "records[1]"),
    (
        "save",
        ([_record("ok"), _record("big", metadata={"t": "x" * 70_000})],),
        {},
        "records[1].metadata",
    ),
    ("save", ([_record("when", metadata={"at": T0})],), {}, "records[0].metadata"),
    ("save", ([_record("set", metadata={"s": {1, 2}})],), {}, "records[0].metadata"),
    ("save", ([MemoryRecord(id="", content="no id")],), {}, "records[0].id"),
    ("update", ("x",), {}, "record"),
    ("search", ("1.0",), {}, "query_embedding"),
    ("search", ([],), {}, "query_embedding"),
    ("search", ([1.0, "2"],), {}, "query_embedding"),
    ("search", ([math.nan],), {}, "query_embedding"),
    ("search", ([1.0],), {"limit": -1}, "limit"),
    ("search", ([1.0],), {"limit": True}, "limit"),
    ("search", ([1.0],), {"min_score": "0"}, "min_score"),
    ("search", ([1.0],), {"scope_prefix": 3}, "scope_prefix"),
    ("search", ([1.0],), {"categories": "travel"}, "categories"),
    ("search", ([1.0],), {"categories": [1]}, "categories"),
    ("search", ([1.0],), {"metadata_filter": [("k", 1)]}, "metadata_filter"),
    ("delete", (), {"record_ids": "abc"}, "record_ids"),
    ("delete", (), {"older_than": "2026-01-01"}, "older_than"),
    ("delete", (), {"scope_prefix": b"/a"}, "scope_prefix"),
    ("reset", (3,), {}, "scope_prefix"),
    ("get_record", (3,), {}, "record_id"),
    ("list_records", (), {"limit": -1}, "limit"),
    ("list_records", (), {"offset": -1}, "offset"),
    ("list_records", (3,), {}, "scope_prefix"),
    ("count", (3,), {}, "scope_prefix"),
    ("list_categories", (3,), {}, "scope_prefix"),
    ("list_scopes", (None,), {}, "parent"),
    ("get_scope_info", (None,), {}, "scope"),
]


@pytest.mark.parametrize(
    ("method", "args", "kwargs", "argument"),
    BAD_CALLS,
    ids=[f"{m}-{a}-{n}" for n, (m, _, _, a) in enumerate(BAD_CALLS)],
)
def test_bad_arguments_are_refused_naming_them_and_nothing_is_written(
    method: str,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    argument: str,
    crew_store: SyncStore,
    storages: list[MemoryStorage],
) -> None:
    storage = _storage(crew_store, storages)
    storage.save([_record("kept", embedding=[1.0])])
    with pytest.raises(InvalidRequestError) as refused:
        getattr(storage, method)(*args, **kwargs)
    assert refused.value.argument == argument
    assert _ids(storage.list_records()) == ["kept"]


def test_bad_storage_options_are_refused(crew_store: SyncStore) -> None:
    for user in ("", 7, "a\nb", None):
        with pytest.raises(InvalidRequestError) as refused:
            MemoryStorage(crew_store.memory, user_identifier=user)  # type: ignore[arg-type]
        assert refused.value.argument == "user_identifier"
    with pytest.raises(InvalidRequestError) as refused:
        MemoryStorage("memory://", user_identifier="ana")  # type: ignore[arg-type]
    assert refused.value.argument == "memory"
    with pytest.raises(TypeError):
        MemoryStorage(crew_store.memory)  # type: ignore[call-arg]


# ---------------------------------------------------------------------- crews


class ScriptedLLM(BaseLLM):
    """A model with canned answers that records every prompt (no hosted model is called):
    the agent gives its next answer; CrewAI's memory questions (what to remember, where
    to file it, whether it repeats one kept) get fixed answers."""

    answers: list[str] = Field(default_factory=list)
    prompts: list[tuple[str, str]] = Field(default_factory=list)

    def call(self, messages: Any, *args: Any, **kwargs: Any) -> str:
        system = messages if isinstance(messages, str) else messages[0]["content"]
        text = messages if isinstance(messages, str) else messages[-1]["content"]
        kind = next((k for k, prompt in PROMPTS.items() if system == prompt), "agent")
        self.prompts.append((kind, text))
        if kind == "extract_memories":  # what to remember: the task's answer
            return json.dumps({"memories": [text.split("Final Answer: ")[-1].split("\n")[0]]})
        if kind == "save":
            return json.dumps(
                {
                    "suggested_scope": "/trips",
                    "categories": ["travel"],
                    "importance": 0.9,
                    "extracted_metadata": {"entities": ["Lisbon"], "dates": [], "topics": []},
                }
            )
        if kind == "consolidation":
            return json.dumps({"actions": [], "insert_new": True})
        if kind == "query":
            return json.dumps({"recall_queries": [text], "complexity": "simple"})
        return f"Thought: I know this.\nFinal Answer: {self.answers.pop(0)}"

    def agent_prompts(self) -> list[str]:
        return [text for kind, text in self.prompts if kind == "agent"]


def _crew(storage: MemoryStorage, llm: ScriptedLLM, task: str) -> Crew:
    agent = Agent(role="planner", goal="Plan Ana's trips", backstory="Knows Ana.", llm=llm)
    work = Task(description=task, expected_output="One sentence.", agent=agent)
    return Crew(
        agents=[agent], tasks=[work], memory=Memory(storage=storage, llm=llm, embedder=embed)
    )


def test_a_crew_keeps_its_memory_in_memory_core(
    crew_store: SyncStore, storages: list[MemoryStorage]
) -> None:
    storage = _storage(crew_store, storages)
    first = ScriptedLLM(model="scripted", answers=["Ana flies to Lisbon on 3 May."])
    _crew(storage, first, "Note Ana's next trip.").kickoff()
    [record] = storage.list_records()
    assert (record.content, record.scope, record.categories, record.importance) == (
        "Ana flies to Lisbon on 3 May.",
        "/trips",
        ["travel"],
        0.9,
    )
    assert record.metadata == {"entities": ["Lisbon"], "dates": [], "topics": []}
    assert record.embedding == embed([record.content])[0]
    [fact] = _facts(crew_store.memory, storage)
    assert fact.object == "Ana flies to Lisbon on 3 May."

    # a new crew, storage and backend (a new process) recalls it into its agent's prompt
    again = MemoryStorage(crew_store.open(), user_identifier=storage.user_identifier)
    second = ScriptedLLM(model="scripted", answers=["On 3 May."])
    crew = _crew(again, second, "When does Ana fly to Lisbon?")
    assert crew.kickoff().raw == "On 3 May."
    [prompt] = second.agent_prompts()
    assert "Relevant memories:" in prompt and "Ana flies to Lisbon on 3 May." in prompt
    assert storage.count() == 2  # the second answer is remembered too
    crew.reset_memories("memory")
    assert storage.count() == 0 and _facts(crew_store.memory, storage) == []


def test_one_users_crew_never_recalls_anothers_memory(
    crew_store: SyncStore, storages: list[MemoryStorage]
) -> None:
    alice = _storage(crew_store, storages, "alice")
    bob = _storage(crew_store, storages, "bob")
    secret = ScriptedLLM(model="scripted", answers=["Alice's passport number ends in 42."])
    _crew(alice, secret, "Note Alice's passport number.").kickoff()
    asked = ScriptedLLM(model="scripted", answers=["I do not know."])
    _crew(bob, asked, "What does the passport number end in?").kickoff()
    [prompt] = asked.agent_prompts()
    assert "Relevant memories:" not in prompt and "42" not in prompt
    assert [r.content for r in alice.list_records()] == ["Alice's passport number ends in 42."]
    assert [r.content for r in bob.list_records()] == ["I do not know."]


def test_crewais_memory_api_works_over_the_storage(
    crew_store: SyncStore, storages: list[MemoryStorage]
) -> None:
    storage = _storage(crew_store, storages)
    memory = Memory(storage=storage, llm=ScriptedLLM(model="scripted"), embedder=embed)
    kept = memory.remember(
        "Ana likes window seats", scope="/prefs", categories=["seat"], importance=0.7
    )
    memory.remember(
        "Ana's budget is 800 euros", scope="/money", categories=["budget"], importance=0.4
    )
    [match, *_] = memory.recall("window seats", depth="shallow")
    assert match.record.id == kept.id and match.record.content == "Ana likes window seats"
    # no touch_records: a recall leaves the access time as it was
    assert not hasattr(storage, "touch_records")
    assert storage.get_record(kept.id).last_accessed == kept.last_accessed
    assert [
        m.record.content for m in memory.recall("budget euros", scope="/money", depth="shallow")
    ] == ["Ana's budget is 800 euros"]
    assert sorted(memory.list_scopes()) == ["/money", "/prefs"]
    assert memory.info("/prefs").record_count == 1
    assert "/prefs (1 records)" in memory.tree()
    assert memory.list_categories() == {"seat": 1, "budget": 1}
    memory.update(kept.id, content="Ana likes aisle seats")
    assert storage.get_record(kept.id).content == "Ana likes aisle seats"
    assert storage.get_record(kept.id).embedding == embed(["Ana likes aisle seats"])[0]
    assert memory.forget(scope="/money") == 1
    memory.reset()
    assert storage.count() == 0


# ---------------------------------------------------------------------- the example


def _example(url: str, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]) -> str:
    monkeypatch.setattr(sys, "argv", [EXAMPLE.name, url])
    runpy.run_path(str(EXAMPLE), run_name="__main__")
    return capfd.readouterr().out


def test_the_example_runs_and_leaves_the_store_as_it_found_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    assert _example("memory://", monkeypatch, capfd).splitlines() == ["I am Ana.", "['I am Ana.']"]
    url = f"sqlite:///{tmp_path / 'example.db'}"
    printed = []
    for _ in range(2):  # a second run prints the same: the first left nothing behind
        printed.append(_example(url, monkeypatch, capfd))
        with open_sync(url) as memory:
            assert memory.facts_about(SUBJECT, user_identifier="crewai-demo") == []
            assert memory.list_conversations() == []
    assert printed[0] == printed[1] == "I am Ana.\n['I am Ana.']\n"


def test_the_example_runs_on_postgresql(
    postgres_server: Any, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    from memory_core_dev.postgres_schemas import schema_url

    url = schema_url(postgres_server.url, "crew")
    assert _example(url, monkeypatch, capfd).splitlines() == ["I am Ana.", "['I am Ana.']"]
    with open_sync(url) as memory:
        assert memory.facts_about(SUBJECT, user_identifier="crewai-demo") == []


def test_the_example_on_nams_says_why_it_cannot_run(
    nams_server: Any, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    from memory_core_dev.nams_server import API_KEY

    monkeypatch.setenv("MEMORY_API_KEY", API_KEY)
    monkeypatch.setenv("MEMORY_WORKSPACE_ID", nams_server.workspace("crewai-example"))
    printed = _example(nams_server.url, monkeypatch, capfd)
    assert printed.startswith("not on this backend: nams.MemoryStorage: needs the 'facts'")


# ---------------------------------------------------------------------- the interface


def _signature(func: Any) -> list[tuple[str, str, Any]]:
    return [(p.name, p.kind.name, p.default) for p in inspect.signature(func).parameters.values()]


SELF = ("self", "POSITIONAL_OR_KEYWORD", inspect.Parameter.empty)
FILTERS = [
    ("scope_prefix", "POSITIONAL_OR_KEYWORD", None),
    ("categories", "POSITIONAL_OR_KEYWORD", None),
]
SEARCH = [
    SELF,
    ("query_embedding", "POSITIONAL_OR_KEYWORD", inspect.Parameter.empty),
    *FILTERS,
    ("metadata_filter", "POSITIONAL_OR_KEYWORD", None),
    ("limit", "POSITIONAL_OR_KEYWORD", 10),
    ("min_score", "POSITIONAL_OR_KEYWORD", 0.0),
]
DELETE = [
    SELF,
    *FILTERS,
    ("record_ids", "POSITIONAL_OR_KEYWORD", None),
    ("older_than", "POSITIONAL_OR_KEYWORD", None),
    ("metadata_filter", "POSITIONAL_OR_KEYWORD", None),
]
RECORDS = [SELF, ("records", "POSITIONAL_OR_KEYWORD", inspect.Parameter.empty)]
PREFIX = [SELF, ("scope_prefix", "POSITIONAL_OR_KEYWORD", None)]
INTERFACE = {
    "save": RECORDS,
    "asave": RECORDS,
    "search": SEARCH,
    "asearch": SEARCH,
    "delete": DELETE,
    "adelete": DELETE,
    "update": [SELF, ("record", "POSITIONAL_OR_KEYWORD", inspect.Parameter.empty)],
    "get_record": [SELF, ("record_id", "POSITIONAL_OR_KEYWORD", inspect.Parameter.empty)],
    "list_records": [
        *PREFIX,
        ("limit", "POSITIONAL_OR_KEYWORD", 200),
        ("offset", "POSITIONAL_OR_KEYWORD", 0),
    ],
    "get_scope_info": [SELF, ("scope", "POSITIONAL_OR_KEYWORD", inspect.Parameter.empty)],
    "list_scopes": [SELF, ("parent", "POSITIONAL_OR_KEYWORD", "/")],
    "list_categories": PREFIX,
    "count": PREFIX,
    "reset": PREFIX,
}


def test_the_storage_interface_keeps_the_shape_the_integration_relies_on(
    crew_store: SyncStore,
) -> None:
    declared = {n for n, f in vars(StorageBackend).items() if inspect.isfunction(f) and n[0] != "_"}
    assert declared == set(INTERFACE)  # a method added to the protocol fails here
    for name, expected in INTERFACE.items():
        assert _signature(getattr(StorageBackend, name)) == expected, name
        assert _signature(getattr(MemoryStorage, name)) == expected, name
        async_kind = inspect.iscoroutinefunction(getattr(StorageBackend, name))
        assert inspect.iscoroutinefunction(getattr(MemoryStorage, name)) == async_kind, name
    storage = MemoryStorage(crew_store.memory, user_identifier="shape")
    assert isinstance(storage, StorageBackend)  # the protocol is runtime-checkable
    assert set(MemoryRecord.model_fields) == {
        "id",
        "content",
        "scope",
        "categories",
        "metadata",
        "importance",
        "created_at",
        "last_accessed",
        "embedding",
        "source",
        "private",
    }
    assert MemoryRecord.model_fields["embedding"].exclude  # why it is packed separately
    assert set(ScopeInfo.model_fields) == {
        "path",
        "record_count",
        "categories",
        "oldest_record",
        "newest_record",
        "child_scopes",
    }
    # a Memory given a storage object uses it as is; a crew takes that Memory as is
    memory = Memory(storage=storage, llm=ScriptedLLM(model="scripted"), embedder=embed)
    assert memory._storage is storage
    agent = Agent(role="r", goal="g", backstory="b", llm=ScriptedLLM(model="scripted"))
    crew = Crew(
        agents=[agent],
        tasks=[Task(description="d", expected_output="o", agent=agent)],
        memory=memory,
    )
    assert crew._memory is memory


# ---------------------------------------------------------------------- the environment


def test_the_tests_run_with_telemetry_off_and_reach_only_the_loopback() -> None:
    from crewai.telemetry.telemetry import Telemetry

    from . import conftest

    assert Telemetry._is_telemetry_disabled()
    assert os.environ["CREWAI_TRACING_ENABLED"] == "false"
    assert "OPENAI_API_KEY" not in os.environ
    assert socket.socket.connect is conftest._guarded_connect
    for address in (("127.0.0.1", 5432), ("::1", 80, 0, 0), ("localhost", 80), "/tmp/s"):
        conftest._loopback_only(address)  # allowed
    for address in (("203.0.113.7", 443), ("2001:db8::1", 443, 0, 0), ("example.com", 80)):
        with pytest.raises(OSError, match=r"127\.0\.0\.1 only"):
            conftest._loopback_only(address)  # checked only: no socket is made
