"""The checked requests hooks receive: ``canonical_uuid``, ``Scope``, ``Target``'s alias
and handle, and the frozen keyword-only request types."""

from __future__ import annotations

import dataclasses
from uuid import UUID, uuid4

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memory_core import requests as rq
from memory_core.models import MessageRole
from memory_core.requests import UNSCOPED, Scope, Target, canonical_uuid

ID = UUID("3f2c5b1e-8d4a-4c6b-9e7f-0a1b2c3d4e5f")


@given(st.uuids())
def test_the_canonical_text_of_any_uuid_is_that_uuid(value: UUID) -> None:
    assert canonical_uuid(str(value)) == value


@pytest.mark.parametrize(
    "text",
    [
        None,
        "",
        "session-1",
        str(ID).upper(),  # not canonical: upper case
        str(ID).replace("-", ""),  # 32 hex digits, no dashes
        "{" + str(ID) + "}",
        "urn:uuid:" + str(ID),
        " " + str(ID)[1:],
        str(ID)[:-1] + "g",  # 36 characters, not hex
        "3f2c5b1e-8d4a-4c6b-9e7f0-a1b2c3d4e5f",  # 36 characters, dashes misplaced
    ],
)
def test_other_texts_are_not_canonical_uuids(text: str | None) -> None:
    assert canonical_uuid(text) is None


def test_a_scope_defaults_to_nobody() -> None:
    assert Scope() == UNSCOPED
    assert (UNSCOPED.user_identifier, UNSCOPED.tenant) == (None, None)
    scope = Scope(user_identifier="alice", tenant="alice")
    assert (scope.user_identifier, scope.tenant) == ("alice", "alice")


def test_a_scope_is_frozen_and_keyword_only() -> None:
    scope = Scope(user_identifier="alice")
    with pytest.raises(dataclasses.FrozenInstanceError):
        scope.tenant = "bob"  # type: ignore[misc]
    with pytest.raises(TypeError):
        Scope("alice")  # type: ignore[call-arg]
    assert hash(scope) == hash(Scope(user_identifier="alice"))


def test_a_target_reads_its_scope() -> None:
    target = Target(
        session_id="s", conversation_id=None, scope=Scope(user_identifier="u", tenant="t")
    )
    assert (target.user_identifier, target.tenant) == ("u", "t")
    bare = Target(session_id="s", conversation_id=None)
    assert bare.scope is UNSCOPED
    assert (bare.user_identifier, bare.tenant) == (None, None)


def test_a_session_id_that_is_a_uuids_canonical_text_is_an_alias() -> None:
    assert Target(session_id=str(ID), conversation_id=None).id_alias == ID
    value = uuid4()
    assert Target(session_id=str(value), conversation_id=None).id_alias == value


@pytest.mark.parametrize("session_id", [None, "support-42", str(ID).upper(), ID.hex])
def test_other_session_ids_are_not_aliases(session_id: str | None) -> None:
    assert Target(session_id=session_id, conversation_id=ID).id_alias is None


def test_the_handle_is_the_session_else_the_conversation_id() -> None:
    assert Target(session_id="s1", conversation_id=ID).handle == "s1"
    assert Target(session_id=None, conversation_id=ID).handle == str(ID)


def test_scoped_requests_read_user_and_tenant_from_their_scope() -> None:
    scope = Scope(user_identifier="alice", tenant="alice")
    requests = [
        rq.ForgetUser(scope=scope, batch_size=10),
        rq.DeleteMessage(message_id=ID, scope=scope),
        rq.ListConversations(limit=5, scope=scope),
        rq.DeleteEntity(entity_id="e1", scope=scope),
        rq.FindEntities(identifier="Ada", limit=3, type=None, scope=scope),
    ]
    for request in requests:
        assert (request.user_identifier, request.tenant) == ("alice", "alice")


def test_list_conversations_starts_without_a_cursor() -> None:
    assert rq.ListConversations(limit=5, scope=UNSCOPED).cursor is None


def test_a_new_message_defaults_to_no_embedding_and_no_mentions() -> None:
    first = rq.NewMessage(role=MessageRole.USER, content="hi", metadata={}, timestamp=None)
    second = rq.NewMessage(role=MessageRole.USER, content="hi", metadata={}, timestamp=None)
    assert first.embedding is None and first.mentions == []
    assert first.mentions is not second.mentions
    assert not hasattr(first, "__dict__")  # slots


def test_requests_are_frozen_and_keyword_only() -> None:
    request = rq.GetConversation(
        target=Target(session_id="s", conversation_id=None), limit=10, since=None
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.limit = 20  # type: ignore[misc]
    with pytest.raises(TypeError):
        rq.GetConversation(Target(session_id="s", conversation_id=None), 10, None)  # type: ignore[call-arg]
