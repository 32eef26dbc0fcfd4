"""Listing cursors: encode/decode round trip, and every malformed cursor refused as
``InvalidRequestError`` naming ``cursor``."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from memory_core.cursors import (
    MAX_CURSOR_CHARS,
    MAX_CURSOR_DEPTH,
    cursor_error,
    decode_cursor,
    encode_cursor,
)
from memory_core.errors import InvalidRequestError


def _raw(kind: str, payload: bytes) -> str:
    """A cursor of ``kind`` holding ``payload`` as is (no JSON encoding)."""
    return f"{kind}." + base64.urlsafe_b64encode(payload).decode("ascii").rstrip("=")


def _refused(kind: str, cursor: Any, **options: Any) -> InvalidRequestError:
    with pytest.raises(InvalidRequestError) as caught:
        decode_cursor(kind, cursor, **options)
    assert caught.value.argument == "cursor"
    return caught.value


@pytest.mark.parametrize(
    "value",
    [
        ["2026-01-01T00:00:00+00:00", "3f2c5b1e-0000-4000-8000-000000000000"],
        "a string",
        "é ünïcode ✓",
        0,
        -17,
        2.5,
        None,
        True,
        {"a": [1, {"b": None}]},
        [],
    ],
)
def test_a_value_comes_back_from_its_cursor(value: Any) -> None:
    cursor = encode_cursor("embedded", value)
    assert decode_cursor("embedded", cursor) == value


def test_a_cursor_is_kind_dot_unpadded_url_safe_ascii() -> None:
    cursor = encode_cursor("my-store2", {"k": "é" * 7})
    kind, dot, payload = cursor.partition(".")
    assert (kind, dot) == ("my-store2", ".")
    assert cursor.isascii()
    assert "=" not in payload and "+" not in payload and "/" not in payload


@pytest.mark.parametrize("kind", ["", "Embedded", "9store", "with space", "a" * 33, "under_score"])
def test_encode_refuses_a_bad_kind(kind: str) -> None:
    with pytest.raises(ValueError, match="cursor kind"):
        encode_cursor(kind, [1])


def test_a_cursor_of_another_kind_is_refused() -> None:
    cursor = encode_cursor("bolt", [1, 2])
    error = _refused("embedded", cursor)
    assert "embedded" in str(error)
    assert decode_cursor("bolt", cursor) == [1, 2]


@pytest.mark.parametrize("cursor", ["embedded", "embeddedWzFd", ".WzFd", "embedded-x.WzFd"])
def test_a_cursor_without_the_kind_prefix_is_refused(cursor: str) -> None:
    _refused("embedded", cursor)


@pytest.mark.parametrize("cursor", [None, 5, b"embedded.WzFd", ["embedded.WzFd"]])
def test_a_cursor_that_is_not_a_string_is_refused(cursor: Any) -> None:
    _refused("embedded", cursor)


def test_a_cursor_longer_than_max_chars_is_refused_before_decoding() -> None:
    cursor = encode_cursor("embedded", "x" * 50)
    assert decode_cursor("embedded", cursor, max_chars=len(cursor)) == "x" * 50
    error = _refused("embedded", cursor, max_chars=len(cursor) - 1)
    assert f"at most {len(cursor) - 1} characters" in str(error)
    # the default bound: a payload that is not even base64 is refused for its length
    assert f"at most {MAX_CURSOR_CHARS}" in str(
        _refused("embedded", "embedded." + "!" * MAX_CURSOR_CHARS)
    )


def test_json_up_to_max_depth_is_read_and_deeper_is_refused() -> None:
    deepest: Any = 1
    for _ in range(MAX_CURSOR_DEPTH):
        deepest = [deepest]
    assert decode_cursor("embedded", encode_cursor("embedded", deepest)) == deepest
    _refused("embedded", encode_cursor("embedded", [deepest]))
    _refused("embedded", encode_cursor("embedded", {"a": {"b": {"c": {"d": {"e": 1}}}}}))


def test_brackets_inside_strings_do_not_count_as_depth() -> None:
    value = ["[[[[[[{{{{{", '\\"[[[[[[', "]]]]"]
    assert decode_cursor("embedded", encode_cursor("embedded", value)) == value


def test_very_deep_json_is_refused_without_recursing() -> None:
    cursor = _raw("embedded", b"[" * 100_000 + b"]" * 100_000)
    _refused("embedded", cursor, max_chars=len(cursor))


@pytest.mark.parametrize(
    "cursor",
    [
        "embedded.W$Fd",  # not base64
        "embedded.W zFd",  # a space is not base64 either
        "embedded.W=zFd",  # padding inside the payload
        "embedded.WzF",  # cut short: "[1" is not JSON
        "embedded.A",  # impossible length
        _raw("embedded", '["é"]'.encode()),  # bytes that are not ASCII
        _raw("embedded", b"\xff\xfe"),
        _raw("embedded", b"{not json"),
        _raw("embedded", b"[1,"),
        _raw("embedded", b""),
    ],
)
def test_payloads_that_are_not_ascii_json_in_base64_are_refused(cursor: str) -> None:
    error = _refused("embedded", cursor)
    assert error.__cause__ is None  # raised "from None": no decoder detail leaks
    assert str(error) == str(cursor_error())


def test_a_huge_integer_is_refused_not_converted() -> None:
    cursor = _raw("embedded", b"9" * 5_000)
    _refused("embedded", cursor, max_chars=len(cursor))
    small = _raw("embedded", json.dumps(10**30).encode())
    assert decode_cursor("embedded", small) == 10**30


def test_cursor_error_names_the_cursor_argument() -> None:
    error = cursor_error("has the wrong shape")
    assert isinstance(error, InvalidRequestError)
    assert error.argument == "cursor"
    assert str(error) == "cursor: has the wrong shape"
    assert cursor_error().argument == "cursor"


@pytest.mark.parametrize("payload", ["Ij8+PyI", "Ij8/PyI", "WzFd==", "WzFd=", "Wz Fd"])
def test_only_the_spelling_a_cursor_is_made_in_is_read(payload: str) -> None:
    """URL-safe base64 without padding: the standard alphabet's ``+`` and ``/`` and
    ``=`` padding are refused (each decodes to what another spelling also gives)."""
    with pytest.raises(InvalidRequestError) as refused:
        decode_cursor("embedded", f"embedded.{payload}")
    assert refused.value.argument == "cursor"
    assert decode_cursor("embedded", "embedded.WzFd") == [1]
