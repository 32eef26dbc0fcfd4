"""What the stats tests of each backend check, on a store only they write to: two users
written by :func:`~tests.backends.erasure_data.write_user` (two sessions of two messages
each; an entity of their own and one they share), counted exactly per user and in total,
on a single-tenant and a multi-tenant store; and a dry-run erasure that deletes nothing
and counts what the erasure that follows deletes."""

from __future__ import annotations

from memory_core import MemoryBackend, StoreStats, UserStats
from tests.backends.erasure_data import write_user


def row(user: str, multi_tenant: bool) -> UserStats:
    """What one user of :func:`write_user` holds: a tenant its two entities, a user of a
    single-tenant store only the entity no one else mentions."""
    return UserStats(
        user_identifier=user, conversations=2, messages=4, entities=2 if multi_tenant else 1
    )


async def check_counts(memory: MemoryBackend, ada: str, bob: str) -> StoreStats:
    """Write ``ada`` and ``bob`` into an empty store and check every count; returns the
    store's stats."""
    await write_user(memory, ada, "A")
    await write_user(memory, bob, "B")
    tenants = memory.multi_tenant
    found = await memory.stats()
    assert found.scope == ("tenant" if tenants else "user")
    assert found.users == [row(u, tenants) for u in sorted([ada, bob])]
    assert found.total is not None
    assert (found.total.conversations, found.total.messages) == (4, 8)
    assert found.total.entities == (4 if tenants else 3)  # one shared name, or one per tenant
    one = await memory.stats(user_identifier=ada)
    assert one.users == [row(ada, tenants)] and one.total is None
    return found


async def check_dry_run(memory: MemoryBackend, ada: str, bob: str) -> None:
    """After :func:`check_counts`: a dry run changes nothing and counts what goes."""
    before = await memory.stats()
    preview = await memory.forget_user(ada, dry_run=True)
    expected = row(ada, memory.multi_tenant)
    assert preview.dry_run
    assert preview.counts == {
        "conversations": expected.conversations,
        "messages": expected.messages,
        "entities": expected.entities,
    }
    after = await memory.stats()
    assert after.users == before.users and after.total == before.total
    report = await memory.forget_user(ada)
    assert {kind: report.counts[kind] for kind in preview.counts} == preview.counts
    left = await memory.stats()
    assert [r.user_identifier for r in left.users] == [bob]
