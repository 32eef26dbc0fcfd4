"""``memory_core.stats``: the models, the rows' order, the table ``memory-core stats``
prints, and ``MemoryBackend.stats`` / ``forget_user(dry_run=True)``: checked arguments,
and a refusal on a backend without ``store_stats``."""

from __future__ import annotations

import json
import logging

import pytest

from memory_core import InvalidRequestError, NotSupportedError, open_backend
from memory_core.stats import StatsTotal, StoreStats, UserStats, merge_counts, table
from tests.fakes import RecordingStore, public


def _stats(total: StatsTotal | None, size: int | None, *users: UserStats) -> StoreStats:
    return StoreStats(
        backend="embedded", scope="user", users=list(users), total=total, size_bytes=size
    )


def test_rows_are_by_user_with_the_row_without_a_user_last() -> None:
    rows = merge_counts({"bob": (1, 2), None: (3, 4), "ada": (5, 6)}, {"ada": 1, "cy": 2})
    assert [(r.user_identifier, r.conversations, r.messages, r.entities) for r in rows] == [
        ("ada", 5, 6, 1),
        ("bob", 1, 2, 0),
        ("cy", 0, 0, 2),  # entities of their own, no conversation
        (None, 3, 4, 0),
    ]


def test_a_store_that_cannot_say_whose_an_entity_is_has_none() -> None:
    [only] = merge_counts({"ada": (2, None)}, None)
    assert only.messages is None and only.entities is None


def test_the_table_aligns_counts_and_says_unknown() -> None:
    found = _stats(
        StatsTotal(conversations=1201, messages=None, entities=3),
        1_234_567,
        UserStats(user_identifier="ada", conversations=1200, messages=None, entities=3),
        UserStats(user_identifier=None, conversations=1, messages=None, entities=0),
    )
    assert table(found, "sqlite:///m.db").splitlines() == [
        "backend: embedded  (sqlite:///m.db)",
        "size: 1.2 MB (1,234,567 bytes)",
        "",
        "user       conversations  messages  entities",
        "---------  -------------  --------  --------",
        "ada                1,200   unknown         3",
        "(no user)              1   unknown         0",
        "---------  -------------  --------  --------",
        "total              1,201   unknown         3",
    ]


def test_one_users_table_has_no_total_and_a_size_may_be_unknown() -> None:
    found = _stats(
        None, None, UserStats(user_identifier="ada", conversations=0, messages=0, entities=0)
    )
    lines = table(found, "bolt://db").splitlines()
    assert lines[1] == "size: unknown (the backend cannot tell)"
    assert lines[3:] == [
        "user  conversations  messages  entities",
        "----  -------------  --------  --------",
        "ada               0         0         0",
    ]


def test_small_sizes_are_in_bytes() -> None:
    assert table(_stats(None, 999), "x").splitlines()[1] == "size: 999 bytes"


@pytest.mark.anyio
async def test_bad_arguments_name_themselves_and_delete_nothing() -> None:
    async with open_backend("memory://") as memory:
        await memory.add_message("s", "user", "kept", user_identifier="ada")
        for bad in ("", 7, "a\nb"):
            with pytest.raises(InvalidRequestError) as caught:
                await memory.stats(user_identifier=bad)  # type: ignore[arg-type]
            assert caught.value.argument == "user_identifier"
        with pytest.raises(InvalidRequestError) as caught:
            await memory.forget_user("ada", dry_run="yes")  # type: ignore[arg-type]
        assert caught.value.argument == "dry_run"
        assert [m.content for m in (await memory.get_conversation("s")).messages] == ["kept"]


@pytest.mark.anyio
async def test_a_dry_run_logs_an_audit_record_that_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with open_backend("memory://") as memory:
        await memory.add_message("s", "user", "secret words", user_identifier="ada")
        with caplog.at_level(logging.INFO, logger="memory_core.audit"):
            report = await memory.forget_user("ada", dry_run=True)
    assert report.dry_run and report.counts == {"conversations": 1, "messages": 1, "entities": 0}
    [record] = [json.loads(r.getMessage()) for r in caplog.records if r.name == "memory_core.audit"]
    assert record["event"] == "forget_user" and record["dry_run"] is True
    assert "secret" not in json.dumps(record) and "ada" not in json.dumps(record)


@pytest.mark.anyio
async def test_a_backend_without_stats_refuses_both_calls() -> None:
    class Erasing(RecordingStore):
        capabilities = RecordingStore.capabilities.__class__(user_erasure=True)

        async def forget_user(self, req: object) -> object:  # type: ignore[override]
            raise AssertionError("a dry run must not erase")

    memory = public(Erasing)()
    with pytest.raises(NotSupportedError) as caught:
        await memory.stats()
    assert caught.value.method == "stats" and caught.value.workaround
    with pytest.raises(NotSupportedError) as caught:
        await memory.forget_user("ada", dry_run=True)
    assert caught.value.method == "forget_user"
