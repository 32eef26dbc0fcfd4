"""The NAMS wire contract: camelCase models, the plain-dict readers and writers made by
``fields_of``, path encoding, and the error table's lookups."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from memory_core import nams_wire as wire
from memory_core.errors import (
    AuthenticationError,
    InvalidRequestError,
    NotFoundError,
    NotSupportedError,
    RateLimitedError,
    StoreError,
    TransportError,
)

STAMP = "2026-01-02T03:04:05Z"
MESSAGE = {
    "id": "m1",
    "conversationId": "c1",
    "role": "user",
    "content": "hello",
    "createdAt": STAMP,
    "tokenCount": 2,
}


def test_models_write_camel_case() -> None:
    out = wire.MessageOut(
        id="m1", conversation_id="c1", role="user", content="hi", token_count=3, score=None
    )
    body = out.to_wire()
    assert body == {
        "id": "m1",
        "conversationId": "c1",
        "role": "user",
        "content": "hi",
        "createdAt": None,
        "tokenCount": 3,
        "score": None,
    }
    assert out.to_wire(omit_none=True) == {
        "id": "m1",
        "conversationId": "c1",
        "role": "user",
        "content": "hi",
        "tokenCount": 3,
    }
    assert json.loads(out.to_json()) == body
    assert json.loads(out.to_json(omit_none=True)) == out.to_wire(omit_none=True)


def test_models_read_camel_case_or_field_names_and_ignore_unknown_keys() -> None:
    by_alias = wire.MessageOut.model_validate({**MESSAGE, "surprise": 1})
    by_name = wire.MessageOut.model_validate(
        {"id": "m1", "conversation_id": "c1", "role": "user", "content": "hello", "token_count": 2}
    )
    assert by_alias.conversation_id == by_name.conversation_id == "c1"
    assert by_alias.token_count == by_name.token_count == 2
    assert by_alias.created_at == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert not hasattr(by_alias, "surprise")


def test_a_conversation_page_writes_next_cursor_in_snake_case_and_reads_both() -> None:
    page = wire.ConversationPage(next_cursor="abc")
    assert page.to_wire() == {"conversations": [], "next_cursor": "abc"}
    assert wire.ConversationPage.model_validate({"nextCursor": "x"}).next_cursor == "x"
    assert wire.ConversationPage.model_validate({"next_cursor": "y"}).next_cursor == "y"


def test_fields_of_builds_the_dict_the_model_would_hold() -> None:
    reader = TypeAdapter(wire.fields_of(wire.MessageOut))
    read = reader.validate_python({**MESSAGE, "surprise": 1})
    model = wire.MessageOut.model_validate(MESSAGE)
    assert type(read) is dict
    assert read == model.model_dump(exclude_unset=True)
    assert read["created_at"] == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert "surprise" not in read
    assert reader.validate_json(json.dumps(MESSAGE)) == read


def test_fields_of_leaves_an_absent_optional_field_out() -> None:
    reader = TypeAdapter(wire.fields_of(wire.MessageOut))
    assert reader.validate_python({"id": "m", "role": "user", "content": "x"}) == {
        "id": "m",
        "role": "user",
        "content": "x",
    }
    assert reader.validate_python({"id": "m", "role": "user", "content": "x", "score": 0.5}) == {
        "id": "m",
        "role": "user",
        "content": "x",
        "score": 0.5,
    }


@pytest.mark.parametrize(
    "body",
    [
        {"role": "user", "content": "x"},  # no id
        {**MESSAGE, "content": 5},
        {**MESSAGE, "createdAt": "yesterday"},
        {**MESSAGE, "tokenCount": "many"},
        {**MESSAGE, "score": [1]},
        [MESSAGE],
    ],
)
def test_fields_of_refuses_what_the_model_refuses(body: Any) -> None:
    with pytest.raises(ValidationError):
        wire.MessageOut.model_validate(body)
    with pytest.raises(ValidationError):
        TypeAdapter(wire.fields_of(wire.MessageOut)).validate_python(body)


def test_fields_of_only_keeps_those_fields_and_does_not_check_the_others() -> None:
    answer = json.dumps({"id": "m1", "conversationId": "c1", "role": 7, "content": {"x": 1}})
    with pytest.raises(ValidationError):
        wire.MessageCreated.model_validate_json(answer)
    assert wire.CREATED_IDS_FIELDS.validate_json(answer) == {"id": "m1", "conversation_id": "c1"}
    with pytest.raises(ValidationError):  # the fields kept are still checked
        wire.CREATED_IDS_FIELDS.validate_json(json.dumps({"id": "m1", "content": "x"}))


def test_types_replace_a_fields_type() -> None:
    listing = wire.MESSAGE_LIST_FIELDS.validate_python({"messages": [MESSAGE]})
    [message] = listing["messages"]
    assert type(message) is dict and message["conversation_id"] == "c1"
    assert wire.MESSAGE_LIST_FIELDS.validate_python(wire.bare_messages([MESSAGE])) == listing
    with pytest.raises(ValidationError):
        wire.MESSAGE_LIST_FIELDS.validate_python({"messages": [{**MESSAGE, "id": None}]})


def test_bare_messages_wraps_a_list_only() -> None:
    assert wire.bare_messages([1]) == {"messages": [1]}
    assert wire.bare_messages({"messages": []}) == {"messages": []}
    assert wire.bare_messages(None) is None


def test_the_conversation_page_reader_accepts_both_cursor_keys() -> None:
    body = {"conversations": [{"id": "c1", "userId": "u", "updatedAt": STAMP}], "nextCursor": "n"}
    read = wire.CONVERSATION_PAGE_FIELDS.validate_python(body)
    assert read["next_cursor"] == "n"
    assert read["conversations"][0]["user_id"] == "u"
    assert wire.CONVERSATION_PAGE_FIELDS.validate_python({"next_cursor": "m"}) == {
        "next_cursor": "m"
    }


@given(st.sampled_from(wire.ROLES), st.text())
def test_message_in_fields_dumps_the_models_bytes(role: str, content: str) -> None:
    expected = wire.MessageIn(role=role, content=content).to_json()  # type: ignore[arg-type]
    assert wire.MESSAGE_IN_FIELDS.dump_json({"role": role, "content": content}) == expected


def test_bulk_in_fields_dumps_and_checks_as_the_model_does() -> None:
    messages = [
        {"role": "user", "content": 'a "quoted" é'},
        {"role": "assistant", "content": "b"},
    ]
    expected = wire.BulkIn(messages=[wire.MessageIn(**m) for m in messages]).to_json()  # type: ignore[arg-type]
    assert wire.BULK_IN_FIELDS.dump_json({"messages": messages}) == expected
    assert wire.BULK_IN_FIELDS.validate_python({"messages": messages}) == {"messages": messages}
    robot = {"messages": [{"role": "robot", "content": "x"}]}
    with pytest.raises(ValidationError):
        wire.BulkIn.model_validate(robot)
    with pytest.raises(ValidationError):
        wire.BULK_IN_FIELDS.validate_python(robot)


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        ("c1", "c1"),
        ("a/b", "a%2Fb"),
        ("q?x#y", "q%3Fx%23y"),
        ("50%", "50%25"),
        ("a b", "a%20b"),
        ("é", "%C3%A9"),
        (".", "%2E"),
        ("..", "%2E%2E"),
        ("a.b", "a.b"),
    ],
)
def test_path_url_encodes_each_id(value: str, encoded: str) -> None:
    assert wire.segment(value) == encoded
    assert wire.path(wire.MESSAGES, conversation_id=value) == f"/conversations/{encoded}/messages"


def test_path_fills_every_placeholder() -> None:
    assert wire.path(wire.CONVERSATION, conversation_id="x/../y") == "/conversations/x%2F..%2Fy"
    assert wire.path(wire.CONVERSATIONS) == "/conversations"
    with pytest.raises(KeyError):
        wire.path(wire.SEARCH)


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (404, NotFoundError),
        (400, InvalidRequestError),
        (401, AuthenticationError),
        (403, AuthenticationError),
        (429, RateLimitedError),
        (501, NotSupportedError),
        (503, TransportError),
        (418, TransportError),  # not in the table
    ],
)
def test_error_for_status(status: int, error: type[Exception]) -> None:
    assert wire.error_for_status(status) is error


def test_code_for_status_and_answer_for() -> None:
    assert wire.code_for_status(429) is wire.ErrorCode.RATE_LIMITED
    assert wire.code_for_status(418) is wire.ErrorCode.INVALID_REQUEST
    assert wire.answer_for(NotFoundError("gone")).status == 404
    assert wire.answer_for(InvalidRequestError("bad")).code is wire.ErrorCode.INVALID_REQUEST
    # errors the server does not pass on are the server's problem: 503
    assert wire.answer_for(AuthenticationError("denied")).status == 503
    assert wire.answer_for(StoreError("broken")).status == 503


def test_the_error_envelope_and_its_parser() -> None:
    body = wire.error_body(wire.ErrorCode.NOT_FOUND, "no such thing", {"id": "x"})
    assert body == {
        "error": {"code": "not_found", "message": "no such thing", "details": {"id": "x"}}
    }
    assert wire.error_body("x", "m") == {"error": {"code": "x", "message": "m"}}
    assert wire.parse_error(body) == ("not_found", "no such thing", {"id": "x"})
    assert wire.parse_error({"error": "plain"}) == (None, "plain", None)
    assert wire.parse_error({"detail": "fastapi"}) == (None, "fastapi", None)
    assert wire.parse_error({"detail": [{"loc": []}]}) == (None, None, [{"loc": []}])
    assert wire.parse_error({"error": {"code": 5, "message": None}}) == (None, None, None)
    assert wire.parse_error("text") == (None, None, None)


def test_entity_types_to_and_from_the_wire() -> None:
    assert wire.entity_type_to_wire("person") == "person"
    assert wire.entity_type_to_wire("EVENT") == "custom"
    assert wire.entity_type_to_wire("spaceship") == "custom"
    assert wire.entity_type_from_wire("Organization") == "ORGANIZATION"
    assert wire.entity_type_from_wire("spaceship") == "CUSTOM"
    assert set(wire.ENTITY_TYPE_TO_WIRE.values()) <= set(wire.ENTITY_TYPES)


def test_too_large_names_the_limit() -> None:
    assert "1048576 bytes" in wire.too_large(1_048_576)
