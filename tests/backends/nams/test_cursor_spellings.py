"""The NAMS client follows a list page's cursor in both spellings a service may send:
``next_cursor`` (the documented one) and ``nextCursor`` (camelCase, as every other
field), in ``list_conversations`` and ``list_conversations_page``; a null cursor in either
spelling ends the walk. Against a mocked service (respx)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
import respx

from memory_core import MemoryBackend, open_backend

pytestmark = pytest.mark.anyio

BASE = "https://nams.test/v1"
SPELLINGS = ("next_cursor", "nextCursor")


def _header(n: int) -> dict[str, Any]:
    return {"id": f"{n:08d}-0000-4000-8000-000000000000", "metadata": {}, "workspaceId": "w"}


def _page(spelling: str, numbers: range, cursor: str | None) -> httpx.Response:
    return httpx.Response(
        200, json={"conversations": [_header(n) for n in numbers], spelling: cursor}
    )


@pytest.fixture
def api() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=BASE, assert_all_called=False) as router:
        yield router


@pytest.fixture
async def memory(api: respx.MockRouter) -> AsyncIterator[MemoryBackend]:
    probe = api.get("/conversations", params={"limit": "1"}, name="probe")
    probe.respond(json={"conversations": [], "next_cursor": None})
    backend = open_backend(
        "nams+https://nams.test/v1", api_key="k", trust_env=False, session_names="server"
    )
    async with backend:
        yield backend


@pytest.mark.parametrize("spelling", SPELLINGS)
async def test_list_conversations_follows_either_spelling(
    memory: MemoryBackend, api: respx.MockRouter, spelling: str
) -> None:
    route = api.get("/conversations").mock(
        side_effect=[_page(spelling, range(2), "c2"), _page(spelling, range(2, 3), None)]
    )
    listed = await memory.list_conversations(limit=10)
    assert [str(c.id)[:8] for c in listed] == ["00000000", "00000001", "00000002"]
    assert route.call_count == 2
    assert route.calls[1].request.url.params["cursor"] == "c2"


@pytest.mark.parametrize("spelling", SPELLINGS)
async def test_a_null_cursor_in_either_spelling_ends_the_walk(
    memory: MemoryBackend, api: respx.MockRouter, spelling: str
) -> None:
    route = api.get("/conversations").mock(return_value=_page(spelling, range(2), None))
    assert len(await memory.list_conversations(limit=10)) == 2
    assert route.call_count == 1
    page = await memory.list_conversations_page(limit=10)
    assert page.next_cursor is None


@pytest.mark.parametrize("spelling", SPELLINGS)
async def test_list_conversations_page_hands_out_either_spelling(
    memory: MemoryBackend, api: respx.MockRouter, spelling: str
) -> None:
    route = api.get("/conversations").mock(
        side_effect=[_page(spelling, range(2), "c2"), _page(spelling, range(2, 4), None)]
    )
    first = await memory.list_conversations_page(limit=2)
    assert first.next_cursor is not None, f"the {spelling} cursor was dropped"
    second = await memory.list_conversations_page(limit=2, cursor=first.next_cursor)
    assert route.calls[1].request.url.params["cursor"] == "c2"
    assert [str(c.id)[:8] for c in first.conversations + second.conversations] == [
        f"{n:08d}" for n in range(4)
    ]
    assert second.next_cursor is None
