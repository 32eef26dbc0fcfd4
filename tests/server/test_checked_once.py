"""A message's content is checked once on each side of the NAMS wire: by the client's
contract (``memory_core.backend``), and by the server's request model and limits
(``memory_core.server.limits``), which then writes through ``MemoryBackend.checked``
without running the contract's checks again. The server runs in this process (a thread),
so one spy sees both sides."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

import memory_core.backend
import memory_core.server.limits
from memory_core import InvalidRequestError
from memory_core.server.limits import ServerLimits
from memory_core_dev.nams_server import NamsTestServer, start_nams_server

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def server() -> Any:
    started = start_nams_server("memory://")
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture
def content_checks(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How many times each side ran ``check_str`` on an argument named like content."""
    counted: Counter[str] = Counter()

    def spy(module: Any) -> None:
        real = module.check_str

        def counting(value: Any, argument: str, *args: Any, **kwargs: Any) -> Any:
            if argument.endswith("content"):
                counted[module.__name__] += 1
            return real(value, argument, *args, **kwargs)

        monkeypatch.setattr(module, "check_str", counting)

    spy(memory_core.backend)
    spy(memory_core.server.limits)
    return counted


async def test_one_message_is_checked_once_by_the_client_and_once_by_the_server(
    server: NamsTestServer, content_checks: Counter[str]
) -> None:
    async with server.backend(NamsTestServer.workspace("once")) as memory:
        created = await memory.create_conversation("s")
        content_checks.clear()
        stored = await memory.add_message(created.id, "user", "checked once a side ✓")
        read = await memory.get_conversation(created.id)
    assert content_checks == {"memory_core.backend": 1, "memory_core.server.limits": 1}
    assert stored.content == read.messages[0].content == "checked once a side ✓"


async def test_a_batch_is_checked_once_on_each_side(
    server: NamsTestServer, content_checks: Counter[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The contract checks a batch's messages in ``Policy.batch_items``: the client runs
    it once, the server not again (its route checks each message's content)."""
    from memory_core.policy import Policy

    batches: list[int] = []
    real = Policy.batch_items

    async def counting(self: Policy, messages: Any, extract: bool) -> Any:
        batches.append(len(messages))
        return await real(self, messages, extract)

    monkeypatch.setattr(Policy, "batch_items", counting)
    batch = [{"role": "user", "content": f"m{i}"} for i in range(3)]
    async with server.backend(NamsTestServer.workspace("once-batch")) as memory:
        created = await memory.create_conversation("s")
        content_checks.clear()
        stored = await memory.add_messages_batch(created.id, batch)
        read = await memory.get_conversation(created.id)
    assert batches == [3]
    assert content_checks == {"memory_core.server.limits": 3}
    assert [m.content for m in stored] == [m.content for m in read.messages] == ["m0", "m1", "m2"]


async def test_an_oversized_content_is_refused_by_the_server_before_the_store(
    content_checks: Counter[str],
) -> None:
    """The server's limits are the store's (``ServerLimits.library``): what the route
    lets through, the store takes; what it refuses is a 400 naming the field."""
    with start_nams_server("memory://", limits=ServerLimits(max_content_chars=10)) as small:
        async with small.backend(NamsTestServer.workspace("small")) as memory:
            created = await memory.create_conversation("s")
            with pytest.raises(InvalidRequestError, match="content"):
                await memory.add_message(created.id, "user", "x" * 11)
            assert (await memory.get_conversation(created.id)).messages == []


def test_a_store_with_lower_limits_than_the_server_is_refused_at_creation() -> None:
    """The routes check against the server's limits and then the store takes the values
    as checked: a store whose own content limit is lower would get what it refuses."""
    from memory_core import ConfigurationError, Limits
    from memory_core.server.app import create_app

    server = ServerLimits(max_content_chars=1000)
    with pytest.raises(ConfigurationError, match="max_content_chars=999 is below"):
        create_app(
            "memory://",
            api_keys=[],
            limits=server,
            backend_options={"limits": Limits(max_content_chars=999)},
        )
    create_app(
        "memory://",
        api_keys=[],
        limits=server,
        backend_options={"limits": Limits(max_content_chars=1000)},
    )
