"""stats on the embedded backend: exact counts per user and in total, on a single-tenant
and a multi-tenant store, the size of the file with its -wal file, and a dry-run
erasure."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_core import open_backend
from tests.backends.stats_cases import (
    check_counts,
    check_dry_run,
    check_long_term_counts,
    check_trace_counts,
)

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("multi_tenant", [False, True], ids=["single-tenant", "multi-tenant"])
async def test_counts_per_user_and_a_dry_run(tmp_path: Path, multi_tenant: bool) -> None:
    url = f"sqlite:///{tmp_path / 'memory.db'}"
    async with open_backend(url, multi_tenant=multi_tenant) as memory:
        await check_counts(memory, "ada", "bob")
        await check_dry_run(memory, "ada", "bob")


@pytest.mark.parametrize("multi_tenant", [False, True], ids=["single-tenant", "multi-tenant"])
async def test_long_term_counts_per_user(tmp_path: Path, multi_tenant: bool) -> None:
    url = f"sqlite:///{tmp_path / 'memory.db'}"
    async with open_backend(url, multi_tenant=multi_tenant) as memory:
        await check_long_term_counts(memory, "ada", "bob")


async def test_the_size_is_the_file_and_its_write_ahead_log(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    async with open_backend(f"sqlite:///{path}") as memory:
        await memory.add_message("s", "user", "words " * 2000, user_identifier="ada")
        wal = path.with_name("memory.db-wal")
        assert wal.stat().st_size > 0  # the test means something only with a log
        found = await memory.stats()
        assert found.size_bytes == path.stat().st_size + wal.stat().st_size


async def test_an_in_memory_store_counts_its_pages() -> None:
    async with open_backend("memory://") as memory:
        empty = (await memory.stats()).size_bytes
        await memory.add_message("s", "user", "words " * 20_000)
        grown = (await memory.stats()).size_bytes
    assert empty is not None and grown is not None and grown > empty + 100_000


async def test_a_tenant_with_entities_only_has_a_row() -> None:
    async with open_backend("memory://", multi_tenant=True) as memory:
        await memory.add_entity("Ada", "PERSON", user_identifier="ada")
        found = await memory.stats()
    assert [(r.user_identifier, r.conversations, r.entities) for r in found.users] == [
        ("ada", 0, 1)
    ]


async def test_conversations_without_a_user_have_the_last_row() -> None:
    async with open_backend("memory://") as memory:
        await memory.add_message("anon", "user", "hi")
        await memory.add_message("mine", "user", "hi", user_identifier="zed")
        found = await memory.stats()
    assert [r.user_identifier for r in found.users] == ["zed", None]
    assert found.users[1].conversations == 1 and found.users[1].messages == 1


@pytest.mark.parametrize("multi_tenant", [False, True], ids=["single-tenant", "multi-tenant"])
async def test_trace_counts_per_user(multi_tenant: bool) -> None:
    async with open_backend("memory://", multi_tenant=multi_tenant) as memory:
        await check_trace_counts(memory, "ada", "bob")
