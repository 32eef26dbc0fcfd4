"""What the stats tests of each backend check, on a store only they write to: two users
written by :func:`~tests.backends.erasure_data.write_user` (two sessions of two messages
each; an entity of their own and one they share), counted exactly per user and in total,
on a single-tenant and a multi-tenant store; each user's traces, and clear_session's
deleting a session's traces; and a dry-run erasure that deletes nothing and counts what
the erasure that follows deletes."""

from __future__ import annotations

from memory_core import MemoryBackend, StoreStats, UserStats
from tests.backends.erasure_data import write_user


def row(user: str, multi_tenant: bool) -> UserStats:
    """What one user of :func:`write_user` holds: a tenant its two entities, a user of a
    single-tenant store only the entity no one else mentions."""
    return UserStats(
        user_identifier=user,
        conversations=2,
        messages=4,
        entities=2 if multi_tenant else 1,
        preferences=0,
        facts=0,
        relationships=0 if multi_tenant else None,
        traces=0,
    )


async def check_long_term_counts(memory: MemoryBackend, ada: str, bob: str) -> None:
    """In an empty store: each user's preferences and facts counted exactly (records
    without a user in their own row), relationships per tenant on a multi-tenant store
    and in the total only on a single-tenant one."""
    tenants = memory.multi_tenant
    for user, count in ((ada, 3), (bob, 1)):
        for i in range(count):
            await memory.add_preference("food", f"dish {i}", user_identifier=user)
            await memory.add_fact(f"{user} subject", "LIKES", f"dish {i}", user_identifier=user)
        scope = user if tenants else None
        first = await memory.add_entity(f"{user} one", "PERSON", user_identifier=scope)
        second = await memory.add_entity(f"{user} two", "PERSON", user_identifier=scope)
        await memory.add_relationship(first.id, second.id, "KNOWS", user_identifier=scope)
    if not tenants:
        await memory.add_fact("nobody", "IS", "anyone")
    found = await memory.stats()
    counts = {r.user_identifier: (r.preferences, r.facts, r.relationships) for r in found.users}
    linked = 1 if tenants else None
    expected = {ada: (3, 3, linked), bob: (1, 1, linked)}
    if not tenants:
        expected[None] = (0, 1, None)
    assert counts == expected
    assert found.total is not None
    totals = (found.total.preferences, found.total.facts, found.total.relationships)
    assert totals == (4, 4 if tenants else 5, 2)
    one = await memory.stats(user_identifier=bob)
    assert [(r.preferences, r.facts, r.relationships) for r in one.users] == [(1, 1, linked)]
    nobody = await memory.stats(user_identifier="nobody-at-all")
    assert [(r.preferences, r.facts, r.relationships) for r in nobody.users] == [
        (0, 0, 0 if tenants else None)
    ]


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


async def check_trace_counts(memory: MemoryBackend, ada: str, bob: str) -> None:
    """In an empty store: each user's traces counted (traces without a user in their own
    row on a single-tenant store), one user's alone, the total; a clear_session of a
    session holding only traces takes them out of the counts."""
    for user, count in ((ada, 3), (bob, 1)):
        for i in range(count):
            trace = await memory.start_trace(f"{user}-s{i % 2}", "plan", user_identifier=user)
            step = await memory.add_step(trace.id, thought="t", user_identifier=user)
            await memory.record_tool_call(step.id, "tool", user_identifier=user)
    if not memory.multi_tenant:
        await memory.start_trace("nobody's", "plan")
    found = await memory.stats()
    expected = {ada: 3, bob: 1, **({} if memory.multi_tenant else {None: 1})}
    assert {r.user_identifier: r.traces for r in found.users} == expected
    assert found.total is not None and found.total.traces == sum(expected.values())
    one = await memory.stats(user_identifier=ada)
    assert [r.traces for r in one.users] == [3]
    assert [r.traces for r in (await memory.stats(user_identifier="nobody-at-all")).users] == [0]
    assert await memory.clear_session(f"{ada}-s0", user_identifier=ada) is True
    left = await memory.stats()
    assert {r.user_identifier: r.traces for r in left.users} == {**expected, ada: 1}
    [stats] = await memory.tool_stats("tool", user_identifier=ada)
    assert stats.total_calls == 1
