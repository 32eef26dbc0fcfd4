"""list_sessions: counts, previews, filters and paging."""

from __future__ import annotations

import anyio

from memory_core import SessionInfo

from ..harness import Harness
from ..scenarios import scenario
from .base import SuiteBase


async def _rows(harness: Harness, handles: list[str], **kwargs: object) -> list[SessionInfo]:
    """list_sessions rows of our sessions only (the store may hold others)."""
    rows = await harness.backend.list_sessions(limit=10_000, **kwargs)  # type: ignore[arg-type]
    return [r for r in rows if r.session_id in handles]


class SessionsSuite(SuiteBase):
    """Scenarios of area ``sessions``."""

    @scenario(
        "sessions.counts_and_previews",
        "list_sessions reports each session's message count and first/last previews",
        requires="list_sessions",
    )
    async def test_sessions_counts_and_previews(self, harness: Harness) -> None:
        first, second = await harness.new_session(), await harness.new_session()
        await harness.fill(first, 3, label="a")
        await harness.fill(second, 1, label="b")
        rows = {r.session_id: r for r in await _rows(harness, [first, second])}
        assert set(rows) == {first, second}
        assert rows[first].message_count == 3
        assert (rows[first].first_message_preview, rows[first].last_message_preview) == (
            "a0",
            "a2",
        )
        assert rows[second].message_count == 1
        conversation = await harness.backend.get_conversation(first)
        assert rows[first].conversation_id == conversation.id
        empty = await harness.new_session(create=True)
        [row] = await _rows(harness, [empty])
        assert (row.message_count, row.first_message_preview, row.last_message_preview) == (
            0,
            None,
            None,
        )

    @scenario(
        "sessions.user_filter",
        "list_sessions(user_identifier=U) lists only the sessions written for U",
        requires="list_sessions",
    )
    async def test_sessions_user_filter(self, harness: Harness) -> None:
        ana, bob = harness.new_user(), harness.new_user()
        mine = [await harness.new_session(user=ana, create=True) for _ in range(2)]
        await harness.new_session(user=bob, create=True)
        await harness.new_session(create=True)  # no user
        rows = await harness.backend.list_sessions(user_identifier=ana)
        assert sorted(r.session_id for r in rows) == sorted(mine), "other users' sessions listed"
        assert {r.user_identifier for r in rows} == {ana}

    @scenario(
        "sessions.prefix",
        "prefix= lists only sessions whose id starts with it, literally and case-sensitively "
        "(% _ * ? [ are plain characters)",
        requires=("list_sessions", "client_chosen_ids"),
    )
    async def test_sessions_prefix(self, harness: Harness) -> None:
        prefix = harness.unique("p") + "-a%b_c*d?e[f]g-é-"
        mine = [await harness.new_session(name=f"{prefix}{n}") for n in range(3)]
        decoys = [
            # matches prefix as a LIKE pattern (% any run, _ one character)
            prefix.replace("%", "LIKE").replace("_", "Q") + "0",
            # matches it as a GLOB / fnmatch pattern (* any run, ? one character, [f] f)
            prefix.replace("*", "GLOB").replace("?", "Q").replace("[f]", "f") + "0",
            # matches it ignoring case
            prefix.upper() + "0",
            # matches it up to the last character
            prefix[:-1],
        ]
        others = [await harness.new_session(name=name) for name in decoys]
        others.append(await harness.new_session())
        for handle in [*mine, *others]:
            await harness.backend.add_message(handle, "user", "hi")
        rows = await harness.backend.list_sessions(prefix=prefix)
        assert sorted(r.session_id for r in rows) == mine

    @scenario(
        "sessions.order_and_offset",
        "order_by, order_dir (ties by session_id), limit and offset page through sessions",
        requires=("list_sessions", "client_chosen_ids"),
    )
    async def test_sessions_order_and_offset(self, harness: Harness) -> None:
        prefix = harness.unique("p") + "-"
        # made and filled last name first, so a store's own order is not the tie-break
        made = [await harness.new_session(name=f"{prefix}{n}") for n in reversed(range(4))]
        mine = made[::-1]
        for handle, count in reversed(list(zip(mine, (2, 1, 2, 1), strict=True))):
            await harness.fill(handle, count)
        backend = harness.backend
        asc = await backend.list_sessions(prefix=prefix, order_by="session_id", order_dir="asc")
        assert [r.session_id for r in asc] == mine
        desc = await backend.list_sessions(prefix=prefix, order_by="session_id", order_dir="desc")
        assert [r.session_id for r in desc] == mine[::-1]
        by_count = await backend.list_sessions(
            prefix=prefix, order_by="message_count", order_dir="desc"
        )
        # ties are broken by session_id ascending
        assert [r.session_id for r in by_count] == [mine[0], mine[2], mine[1], mine[3]]
        pages = [
            await backend.list_sessions(
                prefix=prefix, order_by="session_id", order_dir="asc", limit=1, offset=n
            )
            for n in range(5)
        ]
        assert [[r.session_id for r in page] for page in pages] == [[h] for h in mine] + [[]]

    @scenario(
        "sessions.count_after_delete",
        "after delete_message the session's count and last preview are updated",
        requires=("list_sessions", "delete_message"),
    )
    async def test_sessions_count_after_delete(self, harness: Harness) -> None:
        handle = await harness.new_session()
        stored = await harness.fill(handle, 3)
        assert await harness.backend.delete_message(stored[-1].id) is True
        [row] = await _rows(harness, [handle])
        assert row.message_count == 2
        assert row.last_message_preview == "m1"

    @scenario(
        "sessions.cleared_not_listed",
        "a cleared session is no longer listed",
        requires="list_sessions",
    )
    async def test_sessions_cleared_not_listed(self, harness: Harness) -> None:
        kept, cleared = await harness.new_session(), await harness.new_session()
        await harness.fill(kept, 1)
        await harness.fill(cleared, 1)
        await harness.backend.clear_session(cleared)
        assert [r.session_id for r in await _rows(harness, [kept, cleared])] == [kept]

    @scenario(
        "sessions.newest_first_by_default",
        "by default the most recently updated session comes first",
        requires="list_sessions",
    )
    async def test_sessions_newest_first_by_default(self, harness: Harness) -> None:
        first, second = await harness.new_session(), await harness.new_session()
        await harness.fill(first, 1)
        await anyio.sleep(0.01)
        await harness.fill(second, 1)
        await anyio.sleep(0.01)
        await harness.backend.add_message(first, "user", "later")
        rows = await _rows(harness, [first, second])
        assert [r.session_id for r in rows] == [first, second]
