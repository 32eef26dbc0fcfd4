"""Forged listing cursors (issue 25, item 3): a cursor is bounded before it is decoded,
never parsed recursively, must have the fixed shape of a cursor the store made, and a
page after any position it names costs one keyset seek of ``limit`` rows.

Before: base64 of deeply nested JSON raised ``RecursionError`` out of the cursor decoder
(a 500 from the server, a raw exception from ``list_conversations_page``); the server
before keyset paging also took an offset cursor and read the whole workspace for it."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import uuid4

import httpx
import pytest

from memory_core import InvalidRequestError, MemoryBackend, open_backend
from memory_core.cursors import MAX_CURSOR_CHARS, decode_cursor, encode_cursor
from memory_core.server.hosted import MAX_WIRE_CURSOR_CHARS, HostedMemory
from memory_core_dev.nams_server import NamsTestServer

from .subjects import Subject

pytestmark = pytest.mark.anyio

KIND = {"embedded": "embedded", "bolt": "bolt", "nams": "nams", "postgres": "postgres"}


def b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def wire(backing: str) -> str:
    """A server cursor carrying ``backing`` (any string)."""
    return "nams-server." + b64(json.dumps(backing).encode())


def error_code(response: httpx.Response) -> str:
    assert response.status_code == 400, response.text
    body = response.json()
    assert "cursor" in body["error"]["message"]
    return str(body["error"]["code"])


# ---------------------------------------------------------------------- the library


def test_decoding_is_bounded_and_never_recursive() -> None:
    for depth in (5, 1_000, 3_000):
        with pytest.raises(InvalidRequestError) as raised:
            decode_cursor("embedded", "embedded." + b64(nested(depth)))
        assert raised.value.argument == "cursor"
    # brackets inside strings are not nesting; escaped quotes do not end a string
    assert decode_cursor("k", "k." + b64(b'["[[[[[[\\"]]]", 1]')) == ['[[[[[["]]]', 1]
    assert decode_cursor("k", encode_cursor("k", [[[["x"]]]])) == [[[["x"]]]]
    too_long = encode_cursor("k", "x" * MAX_CURSOR_CHARS)
    with pytest.raises(InvalidRequestError, match=f"at most {MAX_CURSOR_CHARS}"):
        decode_cursor("k", too_long)
    for bad in ("k." + b64("é".encode()), "k." + b64(b"[1,"), "k.!!", "k", "j." + b64(b"1")):
        with pytest.raises(InvalidRequestError):
            decode_cursor("k", bad)


async def test_nested_cursor_is_a_typed_error_on_every_backend(subject: Subject) -> None:
    handle = await subject.session()
    await subject.backend.add_message(handle, "user", "one")
    before = await subject.dump()
    prefix = KIND[subject.kind] + "."
    # 1,500 levels: past the JSON parser's recursion limit, within the cursor size limit
    for cursor in (prefix + b64(nested(1_500)), prefix + b64(nested(40))):
        assert len(cursor) <= MAX_CURSOR_CHARS
        with pytest.raises(InvalidRequestError) as raised:
            await subject.backend.list_conversations_page(limit=5, cursor=cursor)
        assert raised.value.argument == "cursor"
    assert await subject.dump() == before


# ---------------------------------------------------------------------- the server


@pytest.fixture(scope="module")
def workspace(nams_server: NamsTestServer) -> Iterator[tuple[NamsTestServer, str]]:
    name = NamsTestServer.workspace("cursors")
    with nams_server.client(name) as http:
        for _ in range(3):
            assert http.post("/conversations", json={}).status_code == 201
    yield nams_server, name


def test_server_refuses_forged_cursors_with_400(workspace: tuple[NamsTestServer, str]) -> None:
    server, name = workspace
    deep_backing = "embedded." + b64(nested(1_400))  # within the backing cursor size limit
    offset = b64(json.dumps({"t": 0, "i": str(uuid4()), "o": 10**9}).encode())
    forged = [
        "nams-server." + b64(nested(3_000)),  # was a 500 (RecursionError)
        wire(deep_backing),  # was a 500 from the backing store's decoder
        "nams-server." + b64(b'{"a": [[[[[1]]]]]}'),
        "nams-server." + b64(b"x" * (MAX_WIRE_CURSOR_CHARS + 10)),  # refused before decoding
        wire("x" * (MAX_CURSOR_CHARS + 1)),
        wire("not a cursor"),
        wire("embedded." + b64(b'[1.5, "x"]')),
        wire("embedded." + b64(json.dumps([2**80, str(uuid4())]).encode())),
        wire("bolt." + b64(json.dumps([0, 1, str(uuid4())]).encode())),  # another store's
        offset,  # the old server's offset cursor
        "nams-server." + offset,
    ]
    with server.client(name) as http:
        for cursor in forged:
            response = http.get("/conversations", params={"cursor": cursor})
            assert error_code(response) == "invalid_cursor", cursor[:40]
        assert len(http.get("/conversations").json()["conversations"]) == 3


# ---------------------------------------------------------------------- the cost


class Reads:
    """The rows every ``list_conversations_page`` call of the server returned."""

    def __init__(self, backend: MemoryBackend) -> None:
        self.rows: list[int] = []
        page = backend.list_conversations_page

        async def counted(**kwargs: Any) -> Any:
            found = await page(**kwargs)
            self.rows.append(len(found.conversations))
            return found

        backend.list_conversations_page = counted  # type: ignore[method-assign]


@pytest.fixture
async def hosted() -> AsyncIterator[HostedMemory]:
    async with open_backend("memory://", multi_tenant=True) as backend:
        yield HostedMemory(backend)


async def test_a_forged_position_costs_one_page(hosted: HostedMemory) -> None:
    created = [await hosted.create_conversation("w", None, {"i": i}) for i in range(120)]
    newest_first = sorted(created, key=lambda c: (c.updated_at, c.id), reverse=True)
    reads = Reads(hosted.backend)
    honest = await hosted.list_conversations("w", None, 10, None)
    assert reads.rows == [10]
    middle = newest_first[60]
    assert middle.updated_at is not None
    micros = (middle.updated_at - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)
    positions = {
        "after everything": [2**62, str(uuid4())],
        "before everything": [0, str(uuid4())],
        "in the middle": [micros, middle.id],
    }
    for name, key in positions.items():
        reads.rows.clear()
        cursor = wire(encode_cursor("embedded", key))
        page = await hosted.list_conversations("w", None, 10, cursor)
        assert len(reads.rows) == 1 and reads.rows[0] <= 10, name
        if name == "after everything":
            assert page.conversations == honest.conversations
        if name == "before everything":
            assert page.conversations == [] and page.next_cursor is None
        if name == "in the middle":
            assert [c.id for c in page.conversations] == [c.id for c in newest_first[61:71]]
