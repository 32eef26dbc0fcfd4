"""stats: each user's conversations, messages and entities, counted exactly."""

from __future__ import annotations

from typing import Any

from memory_core import EntityRef, InvalidRequestError, MemoryBackend, UserStats

from ..checks import word
from ..harness import Harness
from ..scenarios import scenario
from .base import SuiteBase


def _scope(harness: Harness, user: str) -> str | None:
    """The user to pass on calls that name a session."""
    return user if harness.caps.user_scoped_calls else None


async def _write(harness: Harness, user: str, sizes: list[int], mentions: list[str]) -> None:
    """As ``user``: one session per size with that many messages; the first message of
    the first session mentions ``mentions`` (where the backend links mentions)."""
    scope = _scope(harness, user)
    for number, size in enumerate(sizes):
        handle = await harness.new_session(user=user, create=True)
        extras: dict[str, Any] = {}
        if number == 0 and mentions and harness.caps.explicit_mentions:
            harness.allow_entities()
            extras = {
                "extraction_mode": "explicit",
                "explicit_mentions": [EntityRef(name=m, type="CONCEPT") for m in mentions],
            }
        await harness.backend.add_message(handle, "user", "m0", user_identifier=scope, **extras)
        if size > 1:
            await harness.fill(handle, size - 1, user=scope, label="n")


def _expected(
    backend: MemoryBackend, user: str, conversations: int, messages: int, own: int, shared: int
) -> UserStats:
    """The row a user should have: a multi-tenant store's entities are the tenant's (its
    own copy of a shared name included); otherwise only those no one else mentions."""
    entities = 0
    if backend.capabilities.explicit_mentions:
        entities = own + shared if backend.multi_tenant else own
    return UserStats(
        user_identifier=user, conversations=conversations, messages=messages, entities=entities
    )


def _matches(found: UserStats, expected: UserStats) -> bool:
    """Equal, where a count the backend cannot make (``None``) is not compared."""
    return (
        found.user_identifier == expected.user_identifier
        and found.conversations == expected.conversations
        and found.messages in (expected.messages, None)
        and found.entities in (expected.entities, None)
    )


class StatsSuite(SuiteBase):
    """Scenarios of area ``stats``."""

    @scenario(
        "stats.counts_per_user",
        "stats counts each user's conversations, messages and entities (a multi-tenant "
        "store's: the tenant's; otherwise those no other user's message mentions), one user "
        "alone without totals, every user with totals",
        requires="store_stats",
    )
    async def test_stats_counts_per_user(self, harness: Harness) -> None:
        ada, bob = harness.new_user(), harness.new_user()
        shared = f"Shared{word()}"
        await _write(harness, ada, [3, 2], [f"Own{word()}", shared])
        await _write(harness, bob, [1], [shared])
        backend = harness.backend
        expected = {
            ada: _expected(backend, ada, 2, 5, own=1, shared=1),
            bob: _expected(backend, bob, 1, 1, own=0, shared=1),
        }
        for user, row in expected.items():
            one = await backend.stats(user_identifier=user)
            assert one.total is None, "stats of one user has totals"
            assert len(one.users) == 1 and _matches(one.users[0], row), one.users
        every = await backend.stats()
        rows = {r.user_identifier: r for r in every.users if r.user_identifier in expected}
        assert set(rows) == set(expected), f"stats() lists {sorted(map(str, rows))}"
        for user, row in expected.items():
            assert _matches(rows[user], row), rows[user]
        assert every.total is not None and every.total.conversations >= 3
        assert every.total.messages is None or every.total.messages >= 6
        assert every.size_bytes is None or every.size_bytes > 0

    @scenario(
        "stats.unknown_user_and_bad_input",
        "stats of a user with nothing is one row of zeros; an empty, non-string or "
        "control-character user raises InvalidRequestError naming user_identifier",
        requires="store_stats",
    )
    async def test_stats_unknown_user_and_bad_input(self, harness: Harness) -> None:
        nobody = harness.new_user()
        found = await harness.backend.stats(user_identifier=nobody)
        assert [r.user_identifier for r in found.users] == [nobody]
        row = found.users[0]
        assert row.conversations == 0 and row.messages in (0, None) and row.entities in (0, None)
        for bad in ("", 7, "a\x00b"):
            try:
                await harness.backend.stats(user_identifier=bad)  # type: ignore[arg-type]
            except InvalidRequestError as exc:
                assert exc.argument == "user_identifier", exc.argument
            else:
                raise AssertionError(f"stats(user_identifier={bad!r}) was accepted")
