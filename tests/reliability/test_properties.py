"""Property-based tests over the whole public API (hypothesis).

Invariants, for any arguments the strategies draw (:mod:`.strategies`):

* a call either succeeds or raises a ``MemoryCoreError`` — never a builtin exception;
* a call that fails changes nothing: the whole store is dumped before and after
  (SQLite or PostgreSQL rows, or every Neo4j node and relationship) and compared;
* a message that was stored reads back exactly.

Embedded runs every time with the most examples; Bolt, NAMS and PostgreSQL run a smaller
profile in CI (``RELIABILITY_PROFILE=full`` for the long run).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.from_thread
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_core import Conversation, MemoryCoreError, Message

from . import strategies as s
from .conftest import FULL, KINDS, open_subject
from .subjects import Subject

EXAMPLES = {"embedded": 150, "bolt": 25, "nams": 30, "postgres": 60}
if FULL:
    EXAMPLES = {"embedded": 3000, "bolt": 400, "nams": 400, "postgres": 1000}


@dataclass
class World:
    portal: anyio.from_thread.BlockingPortal
    subject: Subject
    handles: list[str]


@pytest.fixture(params=KINDS, scope="module")
def world(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[World]:
    tmp = tmp_path_factory.mktemp(f"props-{request.param}")
    with anyio.from_thread.start_blocking_portal() as portal:
        subject = portal.call(open_subject, request.param, request, tmp)

        async def sessions() -> list[str]:
            return [await subject.session() for _ in range(3)]

        handles = portal.call(sessions)
        try:
            yield World(portal, subject, handles)
        finally:
            portal.call(subject.backend.close)


def operation(data: st.DataObject, handles: list[str]) -> tuple[str, dict[str, Any]]:
    """One public method and hostile (sometimes valid) arguments for it."""
    session = data.draw(s.mostly(st.sampled_from(handles), s.ids), "session")
    name = data.draw(
        st.sampled_from(
            [
                "add_message",
                "add_messages_batch",
                "create_conversation",
                "get_conversation",
                "search_messages",
                "get_context",
                "list_sessions",
                "list_conversations",
                "list_conversations_page",
                "delete_message",
                "add_entity",
                "find_entities",
                "delete_entity",
                "clear_session",
                "get_conversation_summary",
                "bulk_add_messages",
            ]
        ),
        "method",
    )
    draw = data.draw
    if name == "add_message":
        args = {
            "session_id": session,
            "role": draw(s.mostly(st.sampled_from(["user", "assistant"]), s.roles)),
            "content": draw(s.mostly(s.plain_text, s.any_text)),
            "metadata": draw(s.mostly(s.good_metadata, s.metadata)),
            "idempotency_key": draw(s.mostly(st.none(), s.any_text)),
        }
    elif name in ("clear_session", "get_conversation_summary"):
        args = {"session_id": session}
    elif name == "delete_entity":
        args = {"entity_id": draw(s.mostly(s.plain_text, s.ids))}
    elif name in ("add_messages_batch", "bulk_add_messages"):
        item = st.fixed_dictionaries(
            {
                "role": s.mostly(st.just("user"), s.roles),
                "content": s.mostly(s.plain_text, s.any_text),
            },
            optional={
                "metadata": s.mostly(s.good_metadata, s.metadata),
                "timestamp": s.mostly(st.datetimes(), s.datetimes),
            },
        )
        args = {
            "session_id": session,
            "messages": draw(s.mostly(st.lists(item, max_size=5), s.json_value)),
            "batch_size": draw(st.one_of(st.integers(1, 3), s.limits)),
        }
    elif name == "create_conversation":
        args = {
            "session_id": session,
            "title": draw(s.mostly(st.none(), s.any_text)),
            "metadata": draw(s.mostly(s.good_metadata, s.metadata)),
        }
    elif name == "get_conversation":
        args = {
            "session_id": session,
            "limit": draw(s.mostly(st.none(), s.limits)),
            "since": draw(s.mostly(st.none(), s.datetimes)),
        }
    elif name == "search_messages":
        args = {
            "query": draw(s.mostly(s.plain_text, s.any_text)),
            "session_id": session,
            "limit": draw(st.one_of(st.just(10), s.limits)),
            "threshold": draw(s.mostly(st.none(), st.one_of(st.floats(), s.any_int))),
            "metadata_filters": draw(s.mostly(st.none(), s.metadata)),
        }
    elif name == "get_context":
        args = {
            "query": draw(st.one_of(st.none(), s.any_text)),
            "session_id": session,
            "max_messages": draw(st.one_of(st.just(5), s.limits)),
        }
    elif name == "list_sessions":
        args = {
            "prefix": draw(s.mostly(st.none(), s.any_text)),
            "limit": draw(s.limits),
            "offset": draw(s.limits),
            "order_by": draw(s.mostly(st.just("updated_at"), s.any_text)),
            "order_dir": draw(s.mostly(st.just("desc"), st.just("sideways"))),
        }
    elif name == "list_conversations":
        args = {"limit": draw(s.limits)}
    elif name == "list_conversations_page":
        # None, or a hostile string: never a cursor any store made
        args = {"limit": draw(s.limits), "cursor": draw(s.mostly(st.none(), s.any_text))}
    elif name == "delete_message":
        args = {"message_id": draw(s.ids)}
    elif name == "add_entity":
        args = {
            "name": draw(s.mostly(s.plain_text, s.any_text)),
            "type": draw(s.mostly(st.just("PERSON"), s.entity_types)),
            "description": draw(s.mostly(st.none(), s.any_text)),
        }
    else:
        args = {
            "identifier": draw(s.mostly(s.plain_text, s.any_text)),
            "limit": draw(s.limits),
            "type": draw(st.one_of(st.none(), s.entity_types)),
        }
    return name, args


async def call_once(subject: Subject, name: str, args: dict[str, Any]) -> bool:
    """True when the call succeeded, False when it failed cleanly."""
    backend = subject.backend
    before = await subject.dump()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = await getattr(backend, name)(**args)
    except MemoryCoreError:
        after = await subject.dump()
        assert after == before, f"{name} failed but changed the store"
        return False
    if name == "add_message" and args["idempotency_key"] is None:
        # (A replayed idempotency key returns the message first stored under it.)
        assert isinstance(result, Message) and result.content == args["content"]
        read = await backend.get_conversation(args["session_id"], limit=1)
        assert read.messages and read.messages[-1].content == args["content"]
    elif name == "get_conversation" or name == "create_conversation":
        assert isinstance(result, Conversation)
    return True


def run_property(world: World, data: st.DataObject, outcomes: list[bool]) -> None:
    name, args = operation(data, world.handles)
    # Anything but a MemoryCoreError escaping call_once fails the test with that error.
    outcomes.append(world.portal.call(call_once, world.subject, name, args))


def test_any_call_succeeds_or_fails_cleanly(world: World) -> None:
    kind = world.subject.kind

    @settings(
        max_examples=EXAMPLES[kind],
        deadline=None,
        derandomize=not FULL,
        suppress_health_check=list(HealthCheck),
        database=None,
    )
    @given(data=st.data())
    def check(data: st.DataObject) -> None:
        run_property(world, data, outcomes)

    outcomes: list[bool] = []
    check()
    # Both paths were exercised: some calls stored or read, others failed cleanly.
    assert len(outcomes) >= EXAMPLES[kind]
    assert any(outcomes) and not all(outcomes)
    print(f"{kind}: {len(outcomes)} calls, {sum(outcomes)} succeeded")
