"""The search scenarios on a store another client is writing to (issue 24, section 2).

The suite must run on someone else's store (DESIGN, section 11). On Neo4j a full-text
score used to follow index-wide statistics (document count, average length), which move
with every write anywhere in the database, so ``search.threshold`` (which reuses a score
from one search as the threshold of the next) failed now and then on a busy store. Here
a second client writes and clears sessions of its own, under another user, for as long
as the search area runs; every scenario must still pass.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest

from memory_core import open_backend
from memory_core.conformance.harness import Harness
from memory_core.conformance.suite import SearchSuite, all_scenarios
from memory_core_dev.neo4j_fixtures import Neo4jHandle

pytestmark = [pytest.mark.anyio, pytest.mark.neo4j]

# Rounds of the scenario that compares scores across calls; each of the old failures
# needed the store's statistics to move between two searches of one round.
THRESHOLD_ROUNDS = 6


async def _other_client(url: str, options: dict[str, Any], stop: anyio.Event) -> int:
    """Write a few messages to a fresh session of another user, clear it, again, until
    ``stop``; the number of sessions written."""
    written = 0
    async with open_backend(url, **options) as other:
        user = Harness.unique("other-user")
        while not stop.is_set():
            session = Harness.unique("other")
            words = " ".join(f"filler{n}" for n in range(written % 7 + 1))
            await other.add_messages_batch(
                session,
                [{"role": "user", "content": f"{words} {n}"} for n in range(10)],
                user_identifier=user,
            )
            written += 1
            await other.clear_session(session, user_identifier=user)
    return written


def _search_scenarios() -> list[str]:
    names = [s.test_name for s in all_scenarios().values() if s.area == "search"]
    assert "test_search_threshold" in names
    return names + ["test_search_threshold"] * (THRESHOLD_ROUNDS - 1)


async def _run(scenario: Callable[..., Awaitable[None]], url: str, options: dict[str, Any]) -> None:
    async with Harness(url, options) as harness:
        await scenario(harness=harness)


async def test_search_scenarios_pass_while_another_client_writes(
    neo4j_server: Neo4jHandle,
) -> None:
    url = neo4j_server.uri
    options: dict[str, Any] = {} if neo4j_server.auth is None else {"auth": neo4j_server.auth}
    suite = SearchSuite()
    stop = anyio.Event()
    sessions: list[int] = []

    async def writer() -> None:
        sessions.append(await _other_client(url, options, stop))

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(writer)
        try:
            for name in _search_scenarios():
                await _run(getattr(suite, name), url, options)
        finally:
            stop.set()
    # The other client really wrote while the scenarios ran.
    assert sessions and sessions[0] >= 1
