"""A text search across one user's sessions in a multi-tenant store costs what that user's
matches cost (schema version 4: the tenant's token in the FTS ``scope`` column): other
users' matches do not change its work, and its hits are those a store-wide search keeps
for the user. The token is no word, any user identifier makes one, and deletes (cascades
included) keep the index whole."""

from __future__ import annotations

from typing import Any

import pytest
from embedded_support import (  # noqa: F401
    fts_integrity,
    memory_fixture,
    search_steps,
    tenants_fixture,
    token_and_store_wide,
)

from memory_core import MemoryBackend, open_backend
from memory_core import requests as rq
from memory_core.backends.embedded import search as search_module
from memory_core.backends.embedded.fts import tenant_token

pytestmark = pytest.mark.anyio

OTHERS = 400  # messages of other users with the word at first, then 10x more


def _rows(count: int, every: int) -> list[dict[str, str]]:
    return [
        {"role": "user", "content": f"ripe apple {i}" if i % every == 0 else f"pear {i}"}
        for i in range(count)
    ]


async def _add_others(backend: MemoryBackend, start: int, count: int) -> None:
    for n in range(start, start + count, 200):
        await backend.add_messages_batch(f"s-{n}", _rows(200, 1), user_identifier=f"u{n}")


async def test_a_users_search_work_does_not_grow_with_other_users_matches(
    tenants: MemoryBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    for session in ("a", "b", "c"):
        await tenants.add_messages_batch(session, _rows(10, 4), user_identifier="ana")
    await _add_others(tenants, 0, OTHERS)
    small, found_small = await search_steps(
        tenants, monkeypatch, "apple", user_identifier="ana", limit=20
    )
    await _add_others(tenants, OTHERS, 9 * OTHERS)
    large, found_large = await search_steps(
        tenants, monkeypatch, "apple", user_identifier="ana", limit=20
    )
    assert len(found_small) == 9
    assert found_large == found_small
    assert large <= small * 1.1 + 50, (small, large)


@pytest.mark.parametrize("filters", [None, {"k": "a"}])
async def test_a_users_hits_are_the_store_wide_hits_kept_for_the_user(
    tenants: MemoryBackend, monkeypatch: pytest.MonkeyPatch, filters: dict[str, Any] | None
) -> None:
    """The tenant's token changes which rows FTS5 reads, not their ranks: candidates,
    scores and order (ties too) are those of the store-wide match kept to the user by
    SQL."""
    rows = [
        {
            "role": "user",
            "content": f"apple {'pie ' * (i % 3)}{i % 5}",
            "metadata": {"k": "ab"[i % 2]},
        }
        for i in range(60)
    ]
    for session in ("one", "two"):
        await tenants.add_messages_batch(session, rows, user_identifier="ana")
    await tenants.add_messages_batch("theirs", _rows(100, 2), user_identifier="bo")
    seen = token_and_store_wide(monkeypatch, lambda token: token == tenant_token("ana"))
    found = await tenants.search_messages(
        "apple pie", user_identifier="ana", limit=25, metadata_filters=filters
    )
    [(scoped, store_wide)] = seen
    assert len(scoped) == (120 if filters is None else 60)  # more than the limit
    assert scoped == store_wide
    assert [m.score for m in found] == [score for _, score in scoped[:25]]


async def test_a_single_tenant_store_searches_without_a_token(memory: MemoryBackend) -> None:
    """Every message of a single-tenant store would share the token: ANDing it would only
    add a doclist to merge."""
    await memory.add_messages_batch("one", _rows(4, 1), user_identifier="ana")
    req = rq.SearchMessages(
        query="apple",
        target=None,
        limit=5,
        threshold=None,
        metadata_filters={},
        query_embedding=None,
        scope=rq.Scope(user_identifier="ana"),
    )
    scope = await memory.store._store.call(lambda c: search_module._scope(c, req), write=False)
    assert scope is not None and scope[2] is None
    assert len(await memory.search_messages("apple", user_identifier="ana")) == 4


async def test_a_tenant_token_is_not_a_word(tenants: MemoryBackend) -> None:
    await tenants.add_messages_batch("one", _rows(3, 1), user_identifier="ana")
    token = tenant_token("ana")
    assert await tenants.search_messages(token, user_identifier="ana") == []
    assert len(await tenants.search_messages("apple", user_identifier="ana")) == 3


ODD_USERS = [
    "Ána López",
    'quote " star * colon : paren ( minus -',
    "日本語のユーザー",
    "spaces  and émoji 🍎",
    "x" * 1_024,
    "é" * 512,
]


async def test_any_user_identifier_searches_its_own_messages_only(
    tenants: MemoryBackend,
) -> None:
    for n, user in enumerate(ODD_USERS):
        await tenants.add_messages_batch(f"s{n}", _rows(n + 2, 1), user_identifier=user)
    for n, user in enumerate(ODD_USERS):
        found = await tenants.search_messages("apple", user_identifier=user, limit=50)
        assert len(found) == n + 2, user[:20]
        assert {m.session_id for m in found} == {f"s{n}"}
    await fts_integrity(tenants)


async def test_deletes_keep_the_index_whole(tenants: MemoryBackend) -> None:
    """A cascade deletes messages after their conversation is gone: their index entries
    (the tenant's token with them) are still removed exactly."""
    for user in ("ana", "bo"):
        for session in ("one", "two"):
            await tenants.add_messages_batch(session, _rows(6, 1), user_identifier=user)
    stored = await tenants.add_message("one", "user", "apple alone", user_identifier="ana")
    assert await tenants.delete_message(stored.id, user_identifier="ana")
    await tenants.clear_session("two", user_identifier="ana")
    await fts_integrity(tenants)
    assert len(await tenants.search_messages("apple", user_identifier="ana", limit=50)) == 6
    await tenants.forget_user("bo")
    await fts_integrity(tenants)
    assert await tenants.search_messages("apple", user_identifier="bo") == []
    assert len(await tenants.search_messages("apple", user_identifier="ana", limit=50)) == 6


async def test_a_store_opened_single_tenant_then_multi_tenant_keeps_both_searchable(
    tmp_path: Any,
) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    async with open_backend(url) as single:
        await single.add_messages_batch("shared", _rows(3, 1))
    async with open_backend(url, multi_tenant=True) as tenants:
        await tenants.add_messages_batch("own", _rows(4, 1), user_identifier="ana")
        assert len(await tenants.search_messages("apple", user_identifier="ana")) == 4
    async with open_backend(url) as single:
        assert len(await single.search_messages("apple")) == 3
