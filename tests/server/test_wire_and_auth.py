"""Unit tests of the shared wire module and of the server's key/workspace rules."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from memory_core import ConfigurationError
from memory_core import nams_wire as wire
from memory_core.server.auth import ApiKeys, check_open_server, resolve_workspace
from memory_core.server.errors import ApiError
from memory_core.server.faults import Faults


def test_path_encodes_every_id() -> None:
    assert wire.path(wire.MESSAGES, conversation_id="a/b") == "/conversations/a%2Fb/messages"
    assert wire.path(wire.CONVERSATION, conversation_id=".") == "/conversations/%2E"
    assert wire.segment("x y") == "x%20y"


def test_entity_types_map_both_ways() -> None:
    assert wire.entity_type_to_wire("OBJECT") == "custom"
    assert wire.entity_type_to_wire("event") == "custom"
    assert wire.entity_type_to_wire("PERSON") == "person"
    assert wire.entity_type_from_wire("organization") == "ORGANIZATION"
    assert wire.entity_type_from_wire("something-new") == "CUSTOM"
    assert set(wire.ENTITY_TYPE_TO_WIRE.values()) == set(wire.ENTITY_TYPES)


def test_error_envelope_and_tolerant_parsing() -> None:
    body = wire.error_body(wire.ErrorCode.INVALID_LIMIT, "bad", {"limit": 0})
    assert body == {"error": {"code": "invalid_limit", "message": "bad", "details": {"limit": 0}}}
    assert wire.parse_error(body) == ("invalid_limit", "bad", {"limit": 0})
    assert wire.parse_error({"error": "plain"}) == (None, "plain", None)
    assert wire.parse_error({"detail": "fastapi"}) == (None, "fastapi", None)
    assert wire.parse_error("nonsense") == (None, None, None)


def test_models_are_camel_case_on_the_wire() -> None:
    page = wire.ConversationPage.model_validate({"conversations": [], "nextCursor": "c"})
    assert page.to_wire() == {"conversations": [], "next_cursor": "c"}
    created = wire.MessageCreated(id="1", conversation_id="c", role="user", content="x")
    assert "createdAt" not in created.to_wire(omit_none=True)
    assert set(created.to_wire(omit_none=True)) == {"id", "conversationId", "role", "content"}


def test_api_keys_parse_and_hide() -> None:
    keys = ApiKeys.parse(["k1", " k2 = team ", ""])
    assert keys.lookup("k1") == (True, None)
    assert keys.lookup("k2") == (True, "team")
    assert keys.lookup("k3") == (False, None)
    assert "k1" not in repr(keys) and "k2" not in repr(keys)
    with pytest.raises(ConfigurationError):
        ApiKeys.parse(["=ws"])
    with pytest.raises(ConfigurationError):
        ApiKeys.parse(["k=bad workspace"])


def test_keys_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NAMS_SERVER_API_KEYS", "a,b=w")
    keys = ApiKeys.from_env(["c"])
    assert set(keys.bindings) == {"a", "b", "c"} and keys.bindings["b"] == "w"


@pytest.mark.parametrize(
    ("auth", "header", "expected"),
    [
        ("Bearer open", None, "default"),
        ("Bearer open", "ws-1", "ws-1"),
        ("Bearer bound", None, "team"),
        ("Bearer bound", "team", "team"),
        ("bearer  open ", None, "default"),
    ],
)
def test_workspace_resolution(auth: str, header: str | None, expected: str) -> None:
    keys = ApiKeys.parse(["open", "bound=team"])
    assert resolve_workspace(keys, auth, header) == expected


@pytest.mark.parametrize(
    ("auth", "header", "status"),
    [
        (None, None, 401),
        ("Bearer nope", None, 401),
        ("Token open", None, 401),
        ("Bearer bound", "other", 403),
        ("Bearer open", "has space", 400),
    ],
)
def test_workspace_refusals(auth: str | None, header: str | None, status: int) -> None:
    keys = ApiKeys.parse(["open", "bound=team"])
    with pytest.raises(ApiError) as caught:
        resolve_workspace(keys, auth, header)
    assert caught.value.status == status


def test_open_server_only_on_loopback() -> None:
    open_keys = ApiKeys.parse([])
    assert resolve_workspace(open_keys, None, None) == "default"
    check_open_server(open_keys, "127.0.0.1")
    check_open_server(open_keys, "::1")
    check_open_server(open_keys, "localhost")
    with pytest.raises(ConfigurationError):
        check_open_server(open_keys, "0.0.0.0")
    check_open_server(ApiKeys.parse(["k"]), "0.0.0.0")


def test_fault_knobs_count_down_in_order() -> None:
    faults = Faults(rate_limit=1, unavailable=1, drop=1, retry_after=2)
    assert [faults.take().action for _ in range(4)] == ["drop", "429", "503", "pass"]
    faults.set(latency=0.5)
    assert faults.take().latency == 0.5
    faults.reset()
    assert faults.snapshot()["latency"] == 0.0
    with pytest.raises(ValueError):
        faults.set(rate_limit=-1)


@pytest.mark.parametrize(
    "body",
    [
        {"messages": [{"id": "a", "role": "user", "content": "x", "createdAt": "2025-01-01"}]},
        {"messages": [{"id": "b", "conversation_id": "c", "role": "u", "content": "", "x": [1]}]},
        {
            "messages": [
                {
                    "id": "d",
                    "conversationId": "A",
                    "conversation_id": "B",
                    "role": "r",
                    "content": "y",
                    "tokenCount": "5",
                    "score": 1,
                }
            ]
        },
        {},
    ],
)
def test_message_lists_read_into_dicts_as_the_model_reads_them(body: dict[str, object]) -> None:
    text = json.dumps(body)
    plain = wire.MESSAGE_LIST_FIELDS.validate_json(text).get("messages", [])
    modelled = wire.MessageList.model_validate_json(text).messages
    assert plain == [m.model_dump(exclude_unset=True) for m in modelled]


@pytest.mark.parametrize(
    "body",
    [
        {"messages": [{"id": 1, "role": "user", "content": "x"}]},
        {"messages": [{"id": "a", "role": "user"}]},
        {"messages": [{"id": "a", "role": "user", "content": "x", "createdAt": "soon"}]},
        {"messages": {"id": "a"}},
        [],
    ],
)
def test_message_lists_the_model_refuses_are_refused(body: object) -> None:
    text = json.dumps(body)
    with pytest.raises(ValidationError):
        wire.MESSAGE_LIST_FIELDS.validate_json(text)
    with pytest.raises(ValidationError):
        wire.MessageList.model_validate_json(text)


def test_bulk_bodies_built_from_dicts_are_the_models_bytes() -> None:
    body = {
        "messages": [
            {"role": "user", "content": 'quote " and \\ backslash'},
            {"role": "assistant", "content": "non-ASCII é 漢字 \u2028"},
            {"role": "tool", "content": ""},
        ]
    }
    plain = wire.BULK_IN_FIELDS.dump_json(wire.BULK_IN_FIELDS.validate_python(body))
    assert plain == wire.BulkIn.model_validate(body).to_json()
    assert json.loads(plain) == body


@pytest.mark.parametrize(
    "body",
    [
        {"messages": [{"role": "robot", "content": "x"}]},
        {"messages": [{"role": "user"}]},
        {"messages": [{"role": "user", "content": 5}]},
        {},
    ],
)
def test_bulk_bodies_the_model_refuses_are_refused(body: object) -> None:
    with pytest.raises(ValidationError):
        wire.BULK_IN_FIELDS.validate_python(body)
    with pytest.raises(ValidationError):
        wire.BulkIn.model_validate(body)


@pytest.mark.parametrize(
    "body",
    [
        {
            "conversations": [
                {
                    "id": "a",
                    "userId": "u",
                    "workspaceId": "w",
                    "metadata": {"k": [1, {"x": None}]},
                    "createdAt": "2025-01-01T00:00:00Z",
                    "updatedAt": "2025-01-02T03:04:05.123456+02:00",
                },
                {"id": "b", "user_id": None, "extra": 1},
            ],
            "nextCursor": "c2",
        },
        {"conversations": [], "next_cursor": None},
        {"conversations": [{"id": "c", "created_at": "2025-01-01"}], "next_cursor": "n"},
        {},
    ],
)
def test_conversation_pages_read_into_dicts_as_the_model_reads_them(
    body: dict[str, object],
) -> None:
    from memory_core.backends.nams.sessions import parse_page

    raw = json.dumps(body).encode()
    plain = parse_page(raw, "GET", "/conversations")
    modelled = wire.ConversationPage.model_validate_json(raw)
    assert plain.get("next_cursor") == modelled.next_cursor
    assert plain.get("conversations", []) == [
        c.model_dump(exclude_unset=True) for c in modelled.conversations
    ]


@pytest.mark.parametrize(
    "body",
    [b'{"conversations": [{"userId": "u"}]}', b'{"conversations": {}}', b"not json", b"[]"],
)
def test_conversation_pages_the_model_refuses_are_the_same_transport_error(body: bytes) -> None:
    from memory_core import TransportError
    from memory_core.backends.nams.sessions import parse_json, parse_page

    with pytest.raises(TransportError) as plain:
        parse_page(body, "GET", "/conversations")
    with pytest.raises(TransportError) as modelled:
        parse_json(wire.ConversationPage, body, "GET", "/conversations")
    assert str(plain.value) == str(modelled.value)
