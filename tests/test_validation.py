"""Argument checks: each bad value names its argument and has the right error type."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from uuid import uuid4

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_core import (
    EntityRef,
    InvalidArgumentTypeError,
    InvalidRequestError,
    MemoryCoreError,
    MessageRole,
    MissingIdentifierError,
)
from memory_core import validation as v


@pytest.mark.parametrize(
    ("call", "argument", "error"),
    [
        (lambda: v.check_role("robot"), "role", InvalidRequestError),
        (lambda: v.check_role(3), "role", InvalidArgumentTypeError),
        (lambda: v.check_limit(0), "limit", InvalidRequestError),
        (lambda: v.check_limit(-5), "limit", InvalidRequestError),
        (lambda: v.check_limit("10"), "limit", InvalidArgumentTypeError),
        (lambda: v.check_limit(True), "limit", InvalidArgumentTypeError),
        (lambda: v.check_limit(2.5), "limit", InvalidArgumentTypeError),
        (
            lambda: v.check_uuid("not-a-uuid", "conversation_id"),
            "conversation_id",
            InvalidRequestError,
        ),
        (lambda: v.check_uuid(42, "conversation_id"), "conversation_id", InvalidArgumentTypeError),
        (lambda: v.check_metadata([1, 2]), "metadata", InvalidArgumentTypeError),
        (lambda: v.check_metadata({"a": object()}), "metadata", InvalidRequestError),
        (lambda: v.check_metadata({"a": {1: "x"}}), "metadata", InvalidRequestError),
        (lambda: v.check_metadata({"a": float("nan")}), "metadata", InvalidRequestError),
        (lambda: v.check_str(b"bytes", "content"), "content", InvalidArgumentTypeError),
        (lambda: v.check_optional_str("  ", "session_id"), "session_id", InvalidRequestError),
        (lambda: v.check_threshold(1.5), "threshold", InvalidRequestError),
        (lambda: v.check_datetime("yesterday", "since"), "since", InvalidRequestError),
        (lambda: v.check_entity_type("planet"), "type", InvalidRequestError),
        (lambda: v.check_entity_refs([{}]), "explicit_mentions", InvalidRequestError),
        (lambda: v.check_order("colour", "asc"), "order_by", InvalidRequestError),
        (lambda: v.check_order("created_at", "up"), "order_dir", InvalidRequestError),
    ],
)
def test_bad_values_name_their_argument(call, argument, error) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(error) as info:
        call()
    assert info.value.argument == argument
    assert isinstance(info.value, MemoryCoreError)
    assert argument in str(info.value)


def test_good_values_normalise() -> None:
    assert v.check_role("USER") is MessageRole.USER
    assert v.check_metadata(None) == {}
    assert v.check_metadata({"a": [1, {"b": True}], "c": None}) == {
        "a": [1, {"b": True}],
        "c": None,
    }
    uid = uuid4()
    assert v.check_uuid(str(uid), "x") == uid
    naive = datetime(2026, 1, 1, 12, 0)
    assert v.check_datetime(naive, "since") == naive.replace(tzinfo=UTC)
    plus2 = datetime(2026, 1, 1, 14, 0, tzinfo=timezone(timedelta(hours=2)))
    assert v.check_datetime(plus2, "since") == datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    assert v.check_entity_type("organization") == "ORGANIZATION"
    refs = v.check_entity_refs(["Acme", {"name": "Bob", "type": "person"}, EntityRef(id="e1")])
    assert [(r.id, r.name, r.type) for r in refs] == [
        (None, "Acme", None),
        (None, "Bob", "PERSON"),
        ("e1", None, None),
    ]


def test_missing_identifier_is_type_and_value_error() -> None:
    error = MissingIdentifierError(
        "session_id or conversation_id is required", argument="session_id"
    )
    assert isinstance(error, TypeError)
    assert isinstance(error, ValueError)


@pytest.mark.parametrize(
    ("call", "argument"),
    [
        (lambda: v.check_str("a\ud800b", "content"), "content"),
        (lambda: v.check_optional_str("\udfff", "session_id"), "session_id"),
        (lambda: v.check_metadata({"k": "bad \ud800"}), "metadata"),
        (lambda: v.check_metadata({"bad \ud800": 1}), "metadata"),
        (lambda: v.check_metadata({"k": [{"deep": "\ud800"}]}), "metadata"),
        (lambda: v.check_entity_refs([{"name": "\ud800"}]), "explicit_mentions"),
        (lambda: v.check_limit(2**63), "limit"),
        (lambda: v.check_int(2**70, "offset", minimum=0), "offset"),
    ],
)
def test_values_no_store_can_keep_are_refused(call, argument: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidRequestError) as info:
        call()
    assert info.value.argument == argument


def test_the_largest_64_bit_limit_and_any_json_integer_are_accepted() -> None:
    assert v.check_limit(2**63 - 1) == 2**63 - 1
    # metadata is stored as JSON text everywhere, so integers of any size round-trip
    assert v.check_metadata({"k": 2**70, "emoji": "👩‍👩‍👧"}) == {"k": 2**70, "emoji": "👩‍👩‍👧"}


_ROLE_SPELLINGS = st.sampled_from(
    ["user", "assistant", "system", "tool", "User", "TOOL", "robot", "", *MessageRole]
)
_VALUES = st.one_of(
    st.none(), st.integers(), st.binary(max_size=4), st.lists(st.integers(), max_size=2)
)
_TEXT = st.one_of(
    st.text(max_size=12),
    st.text(alphabet=st.characters(codec="ascii"), max_size=12),
    st.sampled_from(["\ud800", "a\udfffb", "é", "x" * 11]),
)
_BATCH_MESSAGES = st.one_of(
    st.dictionaries(
        st.sampled_from(["role", "content", "metadata", "timestamp", "extra"]),
        st.one_of(_ROLE_SPELLINGS, _TEXT, _VALUES),
        max_size=4,
    ),
    st.fixed_dictionaries({"role": _ROLE_SPELLINGS, "content": _TEXT}),
    _VALUES,
    _TEXT,
)


@settings(max_examples=400, deadline=None)
@given(raw=_BATCH_MESSAGES, max_chars=st.sampled_from([None, 0, 3, 10]))
def test_the_simple_message_path_agrees_with_the_named_checks(
    raw: object, max_chars: int | None
) -> None:
    """``simple_message`` skips the named checks for the common batch message: whatever
    it takes must be exactly what the checks return, and pass each of them."""
    found = v.simple_message(raw, max_chars)
    if found is None:
        return
    assert isinstance(raw, dict) and set(raw) <= {"role", "content"}
    role = v.check_role(raw.get("role"))
    content = v.check_str(raw.get("content"), "content", max_chars=max_chars)
    assert found == (role, content)
    assert type(found[0]) is MessageRole and type(found[1]) is str


@pytest.mark.parametrize(
    "raw",
    [
        {"role": "user", "content": "plain ascii"},
        {"role": MessageRole.TOOL, "content": ""},
        {"role": "assistant", "content": "non-ASCII: é ü 漢字"},
    ],
)
def test_the_common_batch_message_takes_the_simple_path(raw: dict[str, object]) -> None:
    assert v.simple_message(raw, 1_000) is not None


@pytest.mark.parametrize(
    "raw",
    [
        {"role": "User", "content": "x"},  # another spelling: the checks decide
        {"role": "user", "content": "x", "metadata": None},
        {"role": "user", "content": "a\ud800"},
        {"role": "user", "content": "x" * 1_001},
        {"role": "user"},
        {"content": "x"},
        [("role", "user")],
    ],
)
def test_anything_else_is_left_to_the_named_checks(raw: object) -> None:
    assert v.simple_message(raw, 1_000) is None
