"""A mocked NAMS service (respx) for edge cases the real server does not produce: its
base URL, wire-shaped conversations and messages, and the fixtures ``api`` (the mock
router, answering the connect probe) and ``memory`` (a server-id-mode backend on it).
Import the fixtures into a test module to use them."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import respx

from memory_core import MemoryBackend, open_backend
from memory_core.backends.nams import NamsStore

BASE = "https://nams.test/v1"
CID = "3f2b1c4e-5d6a-4b7c-8d9e-0f1a2b3c4d5e"
FAST: dict[str, Any] = {"backoff": 0.001, "max_backoff": 0.002}


def conversation(cid: str = CID, **extra: Any) -> dict[str, Any]:
    """A conversation header as the service sends it."""
    return {"id": cid, "userId": None, "workspaceId": "w", "metadata": {}, **extra}


def message(i: int, cid: str = CID, **extra: Any) -> dict[str, Any]:
    """Message number ``i`` of ``cid`` as the service sends it (one second apart)."""
    stamp = datetime(2025, 1, 1, tzinfo=UTC) + timedelta(seconds=i)
    return {
        "id": f"00000000-0000-4000-8000-{i:012d}",
        "conversationId": cid,
        "role": "user",
        "content": f"m{i}",
        "createdAt": stamp.isoformat(),
        **extra,
    }


def body(call: Any) -> Any:
    """The JSON body of a recorded respx call."""
    return json.loads(call.request.content)


@pytest.fixture
def api() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=BASE, assert_all_called=False) as router:
        router.get("/conversations", params={"limit": "1"}, name="probe").respond(
            json={"conversations": [], "next_cursor": None}
        )
        yield router


def mocked_backend(url: str = "nams+" + BASE, **options: Any) -> MemoryBackend:
    """A server-id-mode backend on the mocked service (not connected), retrying fast
    unless ``options`` say otherwise."""
    settings = {
        "api_key": "k-123",
        "workspace_id": "w",
        "trust_env": False,
        "session_names": "server",
        **FAST,
        **options,
    }
    return open_backend(url, **settings)


@pytest.fixture
async def memory(api: respx.MockRouter) -> AsyncIterator[MemoryBackend]:
    backend = mocked_backend()
    assert isinstance(backend.store, NamsStore)
    async with backend:
        yield backend
