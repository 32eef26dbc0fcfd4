"""How many calls each route makes on the backing store: one public call and one store
hook (one transaction) for every route but ``POST /entities`` (two, see
:mod:`memory_core.server.hosted`) and the entity routes of
:mod:`memory_core.server.entities` — including when the conversation does not exist (the
old server read it first, then acted: two transactions and a check-then-act race)."""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any
from uuid import uuid4

import pytest

from memory_core import MemoryBackend, open_backend
from memory_core import nams_wire as wire
from memory_core.interface import Store
from memory_core.server import entities
from memory_core.server.errors import ApiError
from memory_core.server.hosted import HostedMemory

pytestmark = pytest.mark.anyio

WORKSPACE = "w"
Route = Callable[[HostedMemory, str], Awaitable[Any]]


class Calls:
    """Every public ``MemoryBackend`` call and every ``Store`` hook call, by name."""

    def __init__(self, backend: MemoryBackend) -> None:
        self.public: list[str] = []
        self.hooks: list[str] = []
        for name, _ in inspect.getmembers(MemoryBackend, inspect.iscoroutinefunction):
            if not name.startswith("_") and name not in ("connect", "close"):
                setattr(backend, name, self._wrap(getattr(backend, name), name, self.public))
        # the writes of checked values (MemoryBackend.checked) run through these two
        for name in ("add_message", "add_messages"):
            hidden = f"_add_checked_{name.removeprefix('add_')}"
            wrapped = self._wrap(getattr(backend, hidden), f"checked.{name}", self.public)
            setattr(backend, hidden, wrapped)
        for name, _ in inspect.getmembers(Store, inspect.iscoroutinefunction):
            if name not in ("connect", "close"):
                setattr(
                    backend.store, name, self._wrap(getattr(backend.store, name), name, self.hooks)
                )

    @staticmethod
    def _wrap(method: Any, name: str, into: list[str]) -> Any:
        async def counted(*args: Any, **kwargs: Any) -> Any:
            into.append(name)
            return await method(*args, **kwargs)

        return counted

    def take(self) -> tuple[list[str], list[str]]:
        taken = (list(self.public), list(self.hooks))
        self.public.clear()
        self.hooks.clear()
        return taken


@pytest.fixture
async def hosted() -> AsyncIterator[HostedMemory]:
    async with open_backend("memory://", multi_tenant=True) as backend:
        yield HostedMemory(backend, summarizer=lambda messages: "summary")


MESSAGE = wire.MessageIn(role="user", content="hello topic")

# route -> (the call, the public methods it makes, when the conversation exists)
ROUTES: dict[str, tuple[Route, list[str]]] = {
    "GET /conversations/{id}": (
        lambda h, cid: h.get_conversation(WORKSPACE, cid),
        ["get_conversation"],
    ),
    "GET .../messages": (
        lambda h, cid: h.list_messages(WORKSPACE, cid, 50),
        ["get_conversation"],
    ),
    "POST .../messages": (
        lambda h, cid: h.add_message(WORKSPACE, cid, MESSAGE),
        ["checked.add_message"],
    ),
    "POST .../messages/bulk": (
        lambda h, cid: h.add_messages(WORKSPACE, cid, [MESSAGE, MESSAGE]),
        ["checked.add_messages"],
    ),
    "POST .../search": (
        lambda h, cid: h.search(WORKSPACE, cid, "topic", 10),
        ["search_messages"],
    ),
    "GET .../context": (lambda h, cid: h.context(WORKSPACE, cid), ["get_conversation"]),
    "GET .../observations": (
        lambda h, cid: h.observations(WORKSPACE, cid),
        ["get_conversation"],
    ),
    "GET .../reflections": (
        lambda h, cid: h.reflections(WORKSPACE, cid),
        ["get_conversation"],
    ),
    "GET .../extraction-status": (
        lambda h, cid: h.extraction_status(WORKSPACE, cid),
        ["get_conversation"],
    ),
    "DELETE /conversations/{id}": (
        lambda h, cid: h.delete_conversation(WORKSPACE, cid),
        ["clear_session"],
    ),
}


@pytest.mark.parametrize("route", list(ROUTES))
async def test_each_conversation_route_is_one_backing_call(
    hosted: HostedMemory, route: str
) -> None:
    created = await hosted.create_conversation(WORKSPACE, "ann", {})
    await hosted.add_message(WORKSPACE, created.id, MESSAGE)
    calls = Calls(hosted.backend)
    call, expected = ROUTES[route]
    await call(hosted, created.id)
    public, hooks = calls.take()
    assert public == expected
    assert len(hooks) == 1, hooks


@pytest.mark.parametrize("route", list(ROUTES))
async def test_a_missing_conversation_is_one_backing_call_and_404(
    hosted: HostedMemory, route: str
) -> None:
    calls = Calls(hosted.backend)
    call, expected = ROUTES[route]
    with pytest.raises(ApiError) as raised:
        await call(hosted, str(uuid4()))
    assert raised.value.status == 404
    public, hooks = calls.take()
    assert public == expected
    assert len(hooks) == 1, hooks


async def test_create_list_and_entity_routes(hosted: HostedMemory) -> None:
    calls = Calls(hosted.backend)
    for _ in range(3):
        await hosted.create_conversation(WORKSPACE, None, None)
    assert calls.take() == (["create_conversation"] * 3, ["create_conversation"] * 3)
    page = await hosted.list_conversations(WORKSPACE, None, 2, None)
    await hosted.list_conversations(WORKSPACE, None, 2, page.next_cursor)
    assert calls.take() == (["list_conversations_page"] * 2, ["list_conversations"] * 2)
    await entities.search_entities(hosted.backend, hosted.tenant(WORKSPACE), "Ada", None, 5)
    # Exact names first, then words: two calls where the store searches entities.
    both = ["find_entities", "search_entities"]
    assert calls.take() == (both, both)
    # Two calls: NAMS answers whether the entity existed, the contract's add_entity does not.
    await hosted.add_entity(WORKSPACE, wire.EntityIn(name="Ada", type="person"))
    assert calls.take() == (["find_entities", "add_entity"], ["find_entities", "add_entity"])
