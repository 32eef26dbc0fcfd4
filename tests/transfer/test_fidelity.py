"""Transfer fidelity against the source (docs/transfer.md, "Moving memory between backends").

Round trips that compare an export with a re-export cannot see a change made on export
alone: metadata ints written as floats, keys reordered, microseconds cut come back the
same way twice. Here the TARGET is read through the public API and compared with what
the SOURCE held, read the same way before the transfer, for each pair of backends:
metadata with its JSON types and key order, caller timestamps to the microsecond, roles,
order, titles, ids, idempotency keys, embeddings, entities and their mentions, tenants.

What a target does not carry is taken from the table "What each target carries" of
docs/transfer.md (:data:`DROPS`, checked against the page's cells by
``test_the_drops_are_the_readmes_table``): the fidelity tests compare every other field,
and ``test_the_report_names_exactly_what_the_target_drops`` checks that the per-field
"not carried" report names exactly those fields, each with as many values as the target
lost. Also: the ``.gz`` suffix rule, and ``--skip-bad`` counting past the 20 it quotes.
"""

from __future__ import annotations

import gzip
import io
import json
import re
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from memory_core import EntityRef, HashingEmbedder, MemoryBackend, open_backend
from memory_core.cli import main
from memory_core.transfer import (
    SESSION_KEY,
    ArchiveError,
    OnConflict,
    TransferReport,
    copy_memory,
    export_memory,
    import_memory,
)
from memory_core_dev.nams_server import NamsTestServer

pytestmark = pytest.mark.anyio

TRANSFER_DOC = Path(__file__).resolve().parents[2] / "docs" / "transfer.md"
USERS = ("alice", "bob")
BASE = datetime(2026, 5, 20, 9, 30, 0, 123457, tzinfo=UTC)
# Every JSON type, in an order that is not sorted, under keys that are not ASCII: an
# export that writes ints as floats (or bools as ints), sorts, drops or renames keys, or
# rounds a float changes what the target holds.
META: dict[str, Any] = {
    "zeta": 1,
    "alpha": 1.0,
    "ratio": 0.1 + 0.2,
    "tiny": 1e-7,
    "max_int": 2**53 - 1,
    "negative": -42,
    "yes": True,
    "no": False,
    "none": None,
    "ünïcødé ключ 值": "✓ ok",
    "nested": {"z": [1, 1.0, True, None, {"b": 2, "a": [[]]}], "a": {}, "": ""},
}
TURN = {"turn_key": "trip:1:user", "turn_id": "1", "platform": "test"}
# (name, type) of every entity the corpus holds; Lisbon and Ada are made by mentions.
ENTITIES = (
    ("Acme Corp", "ORGANIZATION"),
    ("Unmentioned", "CONCEPT"),
    ("Lisbon", "LOCATION"),
    ("Ada", "PERSON"),
)
# The order the mentions were written in (the embedded store reads them back in it).
MENTIONED = [("Lisbon", "LOCATION"), ("Ada", "PERSON"), ("Acme Corp", "ORGANIZATION")]


def typed(value: Any) -> str:
    """A JSON value with its types and key order (``1`` ≠ ``1.0`` ≠ ``true``, and
    ``{"b", "a"}`` ≠ ``{"a", "b"}``), where ``==`` on dicts sees neither."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


# ---------------------------------------------------------------------------- the corpus


async def seed(backend: MemoryBackend, user: str) -> None:
    """One tenant's share: a titled conversation with typed metadata, caller timestamps
    to the microsecond (one going backwards: order is the sequence, not the clock), every
    role, empty content, an entity with a description, an unmentioned one, a message
    with turn metadata, an idempotency key and three mentions in a chosen order, and a
    second conversation without title or metadata."""
    scoped = user if backend.multi_tenant else None
    await backend.create_conversation(
        "trip", title=f"Trip ✈ planning for {user}", metadata=META, user_identifier=user
    )
    await backend.add_entity(
        "Acme Corp", "ORGANIZATION", description="a customer", user_identifier=scoped
    )
    await backend.add_entity("Unmentioned", "CONCEPT", user_identifier=scoped)
    await backend.add_messages_batch(
        "trip",
        [
            {"role": "system", "content": "You are helpful.", "timestamp": BASE},
            {
                "role": "user",
                "content": f"{user}: fly to Lisbon",
                "metadata": META,
                "timestamp": BASE + timedelta(microseconds=1),
            },
            {
                "role": "assistant",
                "content": "",
                "metadata": {"b": 1, "a": 2.0},
                "timestamp": BASE + timedelta(seconds=1, microseconds=999_999),
            },
            {
                "role": "tool",
                "content": 'tool output ✓ "quoted"\ttab',
                "metadata": {"n": [1.5, 2, False]},
                "timestamp": BASE - timedelta(days=1, microseconds=7),
            },
        ],
        user_identifier=scoped,
    )
    await backend.add_message(
        "trip",
        "user",
        f"Book Lisbon with Ada for Acme Corp ({user})",
        metadata=TURN,
        idempotency_key=f"{user}-trip-1-user",
        extraction_mode="explicit",
        explicit_mentions=[
            EntityRef(name="Lisbon", type="LOCATION"),
            EntityRef(name="Ada", type="PERSON"),
            EntityRef(name="Acme Corp"),
        ],
        user_identifier=scoped,
    )
    await backend.add_message("notes", "assistant", f"noted for {user}", user_identifier=scoped)


async def seed_nams(backend: MemoryBackend, user: str) -> None:
    """What a NAMS store can hold: typed conversation metadata (one carrying a title the
    way a transfer keeps it), messages of every role, entities."""
    scoped = user if backend.capabilities.user_scoped_calls else None
    trip = await backend.create_conversation(
        "trip", metadata={**META, SESSION_KEY: {"title": f"Trip for {user}"}}, user_identifier=user
    )
    notes = await backend.create_conversation("notes", user_identifier=user)
    handle = "trip" if backend.capabilities.client_chosen_ids else str(trip.id)
    await backend.add_messages_batch(
        handle,
        [
            {"role": "system", "content": "You are helpful."},
            {"role": "user", "content": f"{user}: fly to Lisbon"},
            {"role": "assistant", "content": ""},
            {"role": "tool", "content": "tool output ✓"},
        ],
        user_identifier=scoped,
    )
    other = "notes" if backend.capabilities.client_chosen_ids else str(notes.id)
    await backend.add_message(other, "assistant", f"noted for {user}", user_identifier=scoped)
    await backend.add_entity("Acme Corp", "ORGANIZATION", description="a customer")


# ---------------------------------------------------------------------------- reading back


Values = dict[str, Any]


@dataclass
class Held:
    """What a backend holds, read through the public API, by archive field name:
    conversations by (user, session name), their messages in order, entities by
    (tenant, name, type), and the list_sessions rows where the backend lists sessions."""

    conversations: dict[tuple[str | None, str], Values] = field(default_factory=dict)
    messages: dict[tuple[str | None, str], list[Values]] = field(default_factory=dict)
    entities: dict[tuple[str | None, str, str], Values] = field(default_factory=dict)
    sessions: dict[str | None, list[Values]] = field(default_factory=dict)


def name_and_title(conversation: Any) -> tuple[str, str | None, dict[str, Any]]:
    """Session name, title and metadata as the README says a transfer keeps them where
    the target issues ids or keeps no title: under ``memory_core_transfer``."""
    metadata = dict(conversation.metadata)
    kept = metadata.pop(SESSION_KEY, None)
    name, title = conversation.session_id, conversation.title
    if isinstance(kept, dict):
        name = kept.get("session_id", name)
        title = kept.get("title", title)
    return name, title, metadata


async def held(backend: MemoryBackend, users: tuple[str, ...] = USERS) -> Held:
    caps = backend.capabilities
    found = Held()
    scopes: list[str | None] = list(users) if backend.multi_tenant else [None]
    for scope in scopes:
        cursor: str | None = None
        headers = []
        while True:
            page = await backend.list_conversations_page(
                limit=50, cursor=cursor, user_identifier=scope
            )
            headers += page.conversations
            cursor = page.next_cursor
            if cursor is None:
                break
        for header in headers:
            user = header.user_identifier
            whose = user if caps.user_scoped_calls else None
            conversation = await backend.get_conversation(
                header.session_id,
                limit=caps.max_messages_per_read or 10_000,
                user_identifier=whose,
            )
            name, title, metadata = name_and_title(conversation)
            key = (user, name)
            assert key not in found.conversations, f"{key} listed twice"
            found.conversations[key] = {
                "conversation.id": str(conversation.id),
                "conversation.title": title,
                "conversation.metadata": typed(metadata),
                "conversation.created_at": conversation.created_at,
                "conversation.updated_at": conversation.updated_at,
                "conversation.user_identifier": conversation.user_identifier,
            }
            found.messages[key] = [
                {
                    "message.role": m.role.value,
                    "message.content": m.content,
                    "message.id": str(m.id),
                    "message.created_at": m.created_at,
                    "message.metadata": typed(m.metadata),
                    "message.idempotency_key": m.idempotency_key,
                    "message.embedding": m.embedding,
                    "mention": [(r.name, r.type) for r in m.mentions],
                    "mention.entity_id": [r.id for r in m.mentions],
                }
                for m in conversation.messages
            ]
        if caps.list_sessions:
            rows = await backend.list_sessions(
                limit=100, order_by="session_id", order_dir="asc", user_identifier=scope
            )
            found.sessions[scope] = [row.model_dump() for row in rows]
        if caps.entities:
            for name, kind in ENTITIES:
                for entity in await backend.find_entities(name, type=kind, user_identifier=scope):
                    if entity.name != name:
                        continue  # a close match, not this entity
                    found.entities[(scope, name, kind)] = {
                        "entity.id": entity.id,
                        "entity.description": entity.description,
                        "entity.created_at": entity.created_at,
                        # Never updated: last updated when created (Bolt says None,
                        # the embedded store the creation time).
                        "entity.updated_at": entity.updated_at or entity.created_at,
                        "entity.user_identifier": scope,
                    }
    return found


# ---------------------------------------------------------------------------- what targets drop


# The table "What each target carries", column by column: for each field the
# report can name, the row and the words of the cell that say the target does not keep
# it. test_the_drops_are_the_readmes_table checks these words against docs/transfer.md.
HOOK_COLUMN = "embedded, Bolt, PostgreSQL (hook)"
NAMS_COLUMN = "NAMS (public path)"
PUBLIC_COLUMN = "other backends (public path)"
Documented = dict[str, tuple[str, str]]
NAMS_DROPS: Documented = {
    "conversation.id": ("conversation id / session name", "server-issued id (counted)"),
    "conversation.created_at": ("conversation timestamps", "not carried (counted)"),
    "conversation.updated_at": ("conversation timestamps", "not carried (counted)"),
    "message.id": ("message id, `seq`", "new ids"),
    "message.created_at": ("message timestamps", "not carried (counted)"),
    "message.metadata": ("message metadata, idempotency keys", "not carried (counted per field)"),
    "message.idempotency_key": (
        "message metadata, idempotency keys",
        "not carried (counted per field)",
    ),
    "message.embedding": ("embeddings", "not carried (counted)"),
    "entity.id": ("entities, mentions", "entities created (new ids and timestamps"),
    "entity.created_at": ("entities, mentions", "new ids and timestamps"),
    "entity.updated_at": ("entities, mentions", "new ids and timestamps"),
    "entity.user_identifier": ("entities, mentions", "their tenant not carried, counted"),
    "mention": ("entities, mentions", "mentions not carried (counted)"),
}
# The embedded store written through the public API (on_conflict="new-ids") is the
# column "other backends": it has every flag, so what the flags allow is kept.
PUBLIC_DROPS: Documented = {
    "conversation.created_at": ("conversation timestamps", "not carried (counted)"),
    "conversation.updated_at": ("conversation timestamps", "not carried (counted)"),
    "message.id": ("message id, `seq`", "new ids"),
    "message.created_at": ("message timestamps", "except messages written one by one"),
    "message.embedding": ("embeddings", "not carried"),
    "entity.id": ("entities, mentions", "entities get new ids and timestamps, counted"),
    "entity.created_at": ("entities, mentions", "entities get new ids and timestamps, counted"),
    "entity.updated_at": ("entities, mentions", "entities get new ids and timestamps, counted"),
}
DROPS: dict[str, tuple[str, Documented]] = {
    "embedded": (HOOK_COLUMN, {}),
    "bolt": (HOOK_COLUMN, {}),
    "postgres": (HOOK_COLUMN, {}),
    "nams-portable": (NAMS_COLUMN, NAMS_DROPS),
    "nams-server": (NAMS_COLUMN, NAMS_DROPS),
    "public": (PUBLIC_COLUMN, PUBLIC_DROPS),
}


def readme_table() -> dict[str, dict[str, str]]:
    """The table under "## What each target carries" of docs/transfer.md: row label →
    column → cell."""
    text = TRANSFER_DOC.read_text(encoding="utf-8")
    section = text.split("\n## What each target carries\n", 1)[1]
    lines = section.lstrip("\n").splitlines()
    rows = lines[: next(i for i, line in enumerate(lines) if not line.startswith("|"))]
    head = [cell.strip() for cell in rows[0].strip("|").split("|")]
    table = {}
    for line in rows[2:]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        table[cells[0]] = dict(zip(head[1:], cells[1:], strict=True))
    return table


def test_the_drops_are_the_readmes_table() -> None:
    table = readme_table()
    # The hook column keeps every row.
    assert table and all(row[HOOK_COLUMN].startswith("kept") for row in table.values())
    for column, documented in (
        (NAMS_COLUMN, NAMS_DROPS),
        (PUBLIC_COLUMN, PUBLIC_DROPS),
    ):
        for name, (row, words) in documented.items():
            assert words in table[row][column], (name, row, column)
    # And every row whose NAMS cell says something is not carried, or counted, is one of
    # NAMS_DROPS's (a field the report must name); the title row is kept.
    losing = {
        row
        for row, cells in table.items()
        if "not carried" in cells[NAMS_COLUMN] or "counted" in cells[NAMS_COLUMN]
    }
    assert losing <= {row for row, _ in NAMS_DROPS.values()}
    assert "title, conversation metadata" in table
    assert not losing & {"title, conversation metadata"}


# ---------------------------------------------------------------------------- backends


@asynccontextmanager
async def opened(
    kind: str, request: pytest.FixtureRequest, *, embedder: bool = False
) -> AsyncIterator[MemoryBackend]:
    """A fresh, empty backend of ``kind``: multi-tenant where the store can be."""
    # The default size: the run's Neo4j keeps one vector index across tests (a wipe keeps
    # indexes), and the other Bolt tests' embedders create it with 256 dimensions.
    options: dict[str, Any] = {"embedder": HashingEmbedder()} if embedder else {}
    if kind in ("embedded", "public"):
        backend = open_backend("memory://", multi_tenant=True, **options)
    elif kind == "bolt":
        backend = open_backend(request.getfixturevalue("bolt_url"), multi_tenant=True, **options)
    elif kind == "postgres":
        backend = open_backend(request.getfixturevalue("pg_url"), multi_tenant=True, **options)
    else:
        server: NamsTestServer = request.getfixturevalue("nams_server")
        names = kind.removeprefix("nams-")
        backend = server.backend(NamsTestServer.workspace(), session_names=names, **options)
    async with backend:
        yield backend


async def transfer(
    source: MemoryBackend,
    target: MemoryBackend,
    via: str,
    tmp_path: Path,
    mode: OnConflict = "skip",
) -> tuple[TransferReport, TransferReport]:
    """``copy_memory``, or ``export_memory`` to a ``.jsonl.gz`` then ``import_memory``:
    the report of the reading side (what could not be read) and of the writing side."""
    checkpoint = tmp_path / f"{via}.checkpoint"
    if via == "copy":
        report = await copy_memory(source, target, on_conflict=mode, checkpoint=checkpoint)
        return report, report
    archive = tmp_path / "memory.jsonl.gz"
    read = await export_memory(source, archive)
    written = await import_memory(target, archive, on_conflict=mode, checkpoint=checkpoint)
    return read, written


def _case(source: str, target: str, via: str) -> Any:
    marks = [pytest.mark.neo4j] if "bolt" in (source, target) else []
    return pytest.param(source, target, via, marks=marks, id=f"{source}-{target}-{via}")


def project(found: Held, dropped: set[str], *, target_tenants: bool = True) -> dict[str, Any]:
    """``found`` without the fields in ``dropped`` (and the list_sessions rows and
    mentions' entity ids when ids or timestamps are among them): what must be equal.
    A message's mentions are compared in order: every backend reads them in the order
    they were given, which a transfer keeps."""

    def keep(values: Values) -> Values:
        kept = {k: v for k, v in values.items() if k not in dropped}
        if "entity.id" in dropped:
            kept.pop("mention.entity_id", None)
        return kept

    entities = {
        (user if target_tenants else None, name, kind): keep(values)
        for (user, name, kind), values in found.entities.items()
    }
    if not target_tenants:
        entities = {k: {**v, "entity.user_identifier": None} for k, v in entities.items()}
    return {
        "conversations": {k: keep(v) for k, v in found.conversations.items()},
        "messages": {k: [keep(m) for m in v] for k, v in found.messages.items()},
        "entities": entities,
        "sessions": found.sessions if not dropped else {},
    }


def differences(target: Any, source: Any, path: str = "") -> list[str]:
    """Where ``target`` differs from ``source``, one line per value (for a readable
    failure: the fields, not two screens of dicts)."""
    if isinstance(source, dict) and isinstance(target, dict):
        found = []
        for key in sorted(source.keys() | target.keys(), key=str):
            if key not in target:
                found.append(f"{path}{key}: not in the target")
            elif key not in source:
                found.append(f"{path}{key}: not in the source")
            else:
                found += differences(target[key], source[key], f"{path}{key} / ")
        return found
    if (
        isinstance(source, list)
        and isinstance(target, list)
        and len(source) == len(target)
        and all(isinstance(v, dict) for v in source)
    ):
        return [d for i, v in enumerate(source) for d in differences(target[i], v, f"{path}{i} / ")]
    return [] if target == source else [f"{path}: source {source!r}, target {target!r}"]


async def sequence_numbers(backend: MemoryBackend, path: Path) -> dict[str, int]:
    """Message id → ``seq`` as an export of ``backend`` carries it: the store's own numbers,
    which no public read shows (a target that numbers messages wrongly but keeps their
    order passes every other comparison)."""
    await export_memory(backend, path, users=list(USERS))
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    found = {r["id"]: r["seq"] for r in records if r["record"] == "message"}
    assert len(found) == 12, f"{len(found)} messages exported"
    return found


def same(target: Any, source: Any, report: TransferReport | None = None) -> None:
    """Fail with every difference of ``target`` from ``source``, one per line."""
    found = differences(target, source)
    if found:
        pytest.fail("\n".join([*found, report.summary() if report else ""]), pytrace=False)


# ---------------------------------------------------------------------------- fidelity


@pytest.mark.parametrize(
    ("source_kind", "target_kind", "via"),
    [
        _case("embedded", "embedded", "copy"),
        _case("embedded", "embedded", "archive"),
        _case("embedded", "bolt", "archive"),
        _case("bolt", "embedded", "copy"),
        _case("embedded", "postgres", "archive"),
        _case("postgres", "embedded", "copy"),
        _case("embedded", "public", "archive"),
    ],
)
async def test_the_target_holds_what_the_source_held(
    source_kind: str,
    target_kind: str,
    via: str,
    request: pytest.FixtureRequest,
    tmp_path: Path,
) -> None:
    """Embedded, Bolt, PostgreSQL and the public path: every field, as the source held it."""
    async with (
        opened(source_kind, request, embedder=True) as source,
        opened(target_kind, request) as target,
    ):
        for user in USERS:
            await seed(source, user)
        before = await held(source)
        assert len(before.conversations) == 4 and len(before.entities) == 8
        # an order a sort by name or id would change
        assert before.messages[("alice", "trip")][4]["mention"] == MENTIONED
        _, report = await transfer(
            source, target, via, tmp_path, "new-ids" if target_kind == "public" else "skip"
        )
        after = await held(target)
        dropped = set(DROPS[target_kind][1])
        same(project(after, dropped), project(before, dropped), report)
        if target_kind != "public":  # the hook keeps each message's `seq` (README table)
            sequence = await sequence_numbers(source, tmp_path / "source.jsonl")
            assert await sequence_numbers(target, tmp_path / "target.jsonl") == sequence
        # The source is as it was: a transfer reads only.
        same(project(await held(source), set()), project(before, set()))


@pytest.mark.parametrize("names", ["portable", "server"])
@pytest.mark.parametrize("via", ["copy", "archive"])
async def test_nams_holds_what_the_source_held_as_far_as_it_can(
    names: str, via: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """Into NAMS: every field the README's table does not say NAMS drops (session
    names, titles, conversation metadata, users, roles, content, order, entities)."""
    kind = f"nams-{names}"
    async with (
        opened("embedded", request, embedder=True) as source,
        opened(kind, request) as nams,
    ):
        for user in USERS:
            await seed(source, user)
        before = await held(source)
        _, report = await transfer(source, nams, via, tmp_path)
        after = await held(nams)
        dropped = set(DROPS[kind][1])
        same(
            project(after, dropped, target_tenants=False),
            project(before, dropped, target_tenants=False),
            report,
        )


@pytest.mark.parametrize("names", ["portable", "server"])
@pytest.mark.parametrize("via", ["copy", "archive"])
async def test_the_target_holds_what_nams_held(
    names: str, via: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """Out of NAMS (both session-name modes), each user's conversations into that user:
    names, titles kept in metadata, metadata, roles, content, order, message ids and
    timestamps to the microsecond."""
    kind = f"nams-{names}"
    async with opened(kind, request) as nams, opened("embedded", request) as target:
        for user in USERS:
            await seed_nams(nams, user)
        before = await held(nams)
        assert len(before.conversations) == 4
        read, report = await transfer(nams, target, via, tmp_path)
        after = await held(target)
        # Entities: NAMS cannot list them, and says so.
        assert any("entities" in what for what in read.unreadable), read.summary()
        mine, theirs = project(after, {"conversation.id"}), project(before, {"conversation.id"})
        mine["entities"] = theirs["entities"] = {}
        same(mine, theirs, report)
        # A conversation keeps its id unless it is a derived (version-5) id, which the
        # target replaces with its own for the tenant and session (README, Tenancy).
        for key, values in before.conversations.items():
            kept = after.conversations[key]["conversation.id"] == values["conversation.id"]
            assert kept is (UUID(values["conversation.id"]).version != 5), key
        # The source is as it was: reading it created nothing.
        same(project(await held(nams), set()), project(before, set()))


# ---------------------------------------------------------------------------- not carried


def lost(before: Held, after: Held, multi_tenant: bool) -> Counter[str]:
    """The values of ``before`` that ``after`` does not hold, per archive field, counted
    as the report counts them: a message's metadata, key and embedding where it has one,
    each mention of a message, each field of a conversation and of an entity."""
    found: Counter[str] = Counter()

    def compare(source: Values, target: Values | None, kind: str) -> None:
        if target is None:
            found[kind] += 1
            return
        for name, value in source.items():
            if name == "mention.entity_id" or value in (None, "{}"):
                continue  # the entity's id is entity.id's; nothing to carry
            if name == "mention":  # linked or not (the order is the fidelity tests')
                found[name] += len(value) if sorted(target[name]) != sorted(value) else 0
            elif target[name] != value:
                found[name] += 1

    for key, values in before.conversations.items():
        compare(values, after.conversations.get(key), "conversation")
        theirs = after.messages.get(key, [])
        for position, message in enumerate(before.messages[key]):
            compare(message, theirs[position] if position < len(theirs) else None, "message")
    for (user, name, kind), values in before.entities.items():
        owner = user if multi_tenant else None
        compare(values, after.entities.get((owner, name, kind)), "entity")
    return found


@pytest.mark.parametrize(
    "kind",
    [
        pytest.param(kind, marks=[pytest.mark.neo4j] if kind == "bolt" else [], id=kind)
        for kind in DROPS
    ],
)
async def test_the_report_names_exactly_what_the_target_drops(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """Every field the README's table says the target does not keep is named in the
    report, with as many values as the target lost (compared with the source through the
    public API); no other field is named, and nothing is lost without being named."""
    async with (
        opened("embedded", request, embedder=True) as source,
        opened(kind, request) as target,
    ):
        for user in USERS:
            await seed(source, user)
        before = await held(source)
        mode: OnConflict = "new-ids" if kind == "public" else "skip"
        _, report = await transfer(source, target, "copy", tmp_path, mode)
        after = await held(target)
    reported: Counter[str] = Counter()
    for (name, _), count in report.not_carried.items():
        reported[name] += count
    documented = DROPS[kind][1]
    assert set(reported) == set(documented), report.summary()
    assert reported == lost(before, after, target.multi_tenant), report.summary()
    # The summary names each of them.
    summary = report.summary()
    assert all(f" x {name} (" in summary for name in documented), summary


# ---------------------------------------------------------------------------- .gz


@pytest.mark.parametrize(
    ("name", "packed"),
    [
        ("memory.jsonl.gz", True),
        ("memory.gz", True),
        ("memory.jsonl", False),
        ("memory", False),
        ("memory.gz.jsonl", False),
        ("memory.jsonl.gzip", False),
    ],
)
async def test_the_gz_suffix_decides_compression_both_ways(
    name: str, packed: bool, tmp_path: Path
) -> None:
    """README: ``.gz`` suffix → gzip (the file name ends in ``.gz``); anything else is
    plain JSON Lines. The import reads the name the same way, and gets the source back."""
    async with (
        open_backend("memory://", multi_tenant=True) as source,
        open_backend("memory://", multi_tenant=True) as target,
    ):
        await seed(source, "alice")
        before = await held(source, ("alice",))
        path = tmp_path / name
        await export_memory(source, path)
        data = path.read_bytes()
        assert data.startswith(b"\x1f\x8b") is packed  # the gzip magic number
        text = (gzip.decompress(data) if packed else data).decode("utf-8")
        assert json.loads(text.splitlines()[0])["record"] == "header"
        await import_memory(target, path)
        same(project(await held(target, ("alice",)), set()), project(before, set()))


async def test_the_name_not_the_content_decides_how_an_archive_is_read(tmp_path: Path) -> None:
    """Gzip bytes under a plain name are not decompressed, plain text under a ``.gz`` name
    is not read as text: each is an ArchiveError on line 1 (no gzip or Unicode exception)
    and nothing is written."""
    async with open_backend("memory://") as source:
        await source.add_message("s", "user", "hello")
        await export_memory(source, tmp_path / "plain.jsonl")
        await export_memory(source, tmp_path / "packed.jsonl.gz")
    swapped = {
        "packed-named-plain.jsonl": (tmp_path / "packed.jsonl.gz").read_bytes(),
        "plain-named-packed.jsonl.gz": (tmp_path / "plain.jsonl").read_bytes(),
    }
    for name, data in swapped.items():
        (tmp_path / name).write_bytes(data)
        async with open_backend("memory://") as target:
            with pytest.raises(ArchiveError) as failed:
                await import_memory(target, tmp_path / name)
            assert failed.value.line == 1, (name, str(failed.value))
            assert await target.list_conversations() == []


# ---------------------------------------------------------------------------- --skip-bad

BAD = 25  # more than the 20 a report quotes
QUOTED = 20


def bad_line(number: int) -> str:
    """A bad line of one of three kinds: not JSON, a record missing fields (both refused
    by the reader), a message of a conversation the archive never had (refused by the
    order check): each kind counted on its own path."""
    kind = number % 3
    if kind == 0:
        return f"{{not json {number}"
    if kind == 1:
        return json.dumps({"record": "entity", "id": f"bad-{number}"})
    return json.dumps(
        {
            "record": "message",
            "id": f"00000000-0000-4000-8000-{number:012d}",
            "conversation_id": "00000000-0000-4000-8000-000000000000",
            "seq": 1,
            "role": "user",
            "content": f"orphan {number}",
            "metadata": {},
            "created_at": "2026-05-20T09:30:00.000000Z",
        }
    )


def with_bad_lines(lines: list[str]) -> tuple[list[str], list[int]]:
    """``lines`` (header first, end last) with :data:`BAD` bad lines: one before each
    record after the header, the rest before the end; and the bad lines' numbers."""
    body, end = lines[1:-1], lines[-1]
    out, numbers = [lines[0]], []
    for index in range(max(len(body), BAD)):
        if index < BAD:
            out.append(bad_line(index))
            numbers.append(len(out))
        if index < len(body):
            out.append(body[index])
    out.append(end)
    return out, numbers


async def bad_archive(path: Path) -> tuple[Held, list[int]]:
    """An archive of :func:`seed` for alice with :data:`BAD` bad lines at ``path``; what
    the source held, and the bad lines' numbers."""
    async with open_backend("memory://", multi_tenant=True) as source:
        await seed(source, "alice")
        out = io.StringIO()
        await export_memory(source, out)
        lines, numbers = with_bad_lines(out.getvalue().splitlines())
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return await held(source, ("alice",)), numbers


def quoted_lines(errors: list[str]) -> list[int]:
    return [int(m.group(1)) for e in errors if (m := re.search(r"\bline (\d+):", e))]


async def test_skip_bad_counts_every_bad_line_and_quotes_the_first_20(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    before, numbers = await bad_archive(path)
    assert len(numbers) == BAD
    async with open_backend("memory://", multi_tenant=True) as target:
        report = await import_memory(target, path, skip_bad=True)
        # The import went on: everything good arrived.
        same(project(await held(target, ("alice",)), set()), project(before, set()), report)
    assert report.bad_lines == BAD
    assert len(report.bad_line_errors) == QUOTED
    assert quoted_lines(report.bad_line_errors) == numbers[:QUOTED]
    summary = report.summary().splitlines()
    at = summary.index(f"bad lines skipped: {BAD}")
    assert summary[at + 1 :] == [f"  {e}" for e in report.bad_line_errors]
    assert report.as_dict()["bad_lines"] == BAD
    assert report.as_dict()["bad_line_errors"] == report.bad_line_errors


@pytest.mark.parametrize("json_output", [False, True])
def test_the_cli_counts_every_bad_line_and_quotes_the_first_20(
    json_output: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import anyio

    path = tmp_path / "bad.jsonl"
    _, numbers = anyio.run(bad_archive, path)
    target = f"sqlite:///{tmp_path / 'target.db'}"
    flags = ["--json"] if json_output else []
    code = main(["import", str(path), target, "--multi-tenant", "--skip-bad", "--quiet", *flags])
    out = capsys.readouterr().out
    assert code == 0, out
    if json_output:
        body = json.loads(out)
        assert body["bad_lines"] == BAD
        assert quoted_lines(body["bad_line_errors"]) == numbers[:QUOTED]
    else:
        assert f"bad lines skipped: {BAD}\n" in out
        quoted = [line for line in out.splitlines() if line.startswith("  ")]
        assert quoted_lines(quoted) == numbers[:QUOTED]
