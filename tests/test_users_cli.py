"""``memory-core forget-user`` and ``memory-core stats``, run in-process through
``memory_core.cli.main`` on an embedded SQLite file and on the run's PostgreSQL: the
report on stdout, the table and its JSON form, a dry run that writes nothing, and one
line on stderr with the usual exit codes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memory_core import EntityRef
from memory_core.cli import main
from memory_core.sync import open_backend
from memory_core_dev.postgres_schemas import new_schema, with_schema
from memory_core_dev.postgres_server import PostgresHandle


def _fill(url: str, **options: Any) -> None:
    """ada: two sessions, three messages, an entity of her own, a reasoning trace; bob:
    one message."""
    with open_backend(url, **options) as memory:
        memory.add_message(
            "a1",
            "user",
            "hello",
            user_identifier="ada",
            extraction_mode="explicit",
            explicit_mentions=[EntityRef(name="Lisbon", type="LOCATION")],
        )
        memory.add_message("a1", "assistant", "hi", user_identifier="ada")
        memory.add_message("a2", "user", "again", user_identifier="ada")
        memory.add_message("b1", "user", "other", user_identifier="bob")
        memory.start_trace("a1", "plan a trip", user_identifier="ada")


def _counts(url: str, **options: Any) -> dict[str | None, tuple[int, int | None]]:
    with open_backend(url, **options) as memory:
        return {r.user_identifier: (r.conversations, r.messages) for r in memory.stats().users}


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'memory.db'}"
    _fill(url)
    return url


@pytest.fixture
def postgres_url(postgres_server: PostgresHandle) -> str:
    url = with_schema(postgres_server.url, new_schema("cli"))
    _fill(url)
    return url


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest) -> str:
    """A store holding :func:`_fill`'s records, embedded and on a real server."""
    return str(request.getfixturevalue(f"{request.param}_url"))


def test_a_dry_run_prints_what_would_go_and_writes_nothing(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _counts(url)
    assert main(["forget-user", url, "ada", "--dry-run"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["dry_run"] is True and report["scope"] == "user"
    assert report["counts"] == {"conversations": 2, "messages": 3, "entities": 1}
    assert _counts(url) == before


def test_forget_user_erases_and_prints_the_report(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["forget-user", url, "ada"]) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert report["dry_run"] is False and report["writes_continued"] is False
    assert report["counts"]["conversations"] == 2 and report["counts"]["messages"] == 3
    assert captured.err == ""
    assert _counts(url) == {"bob": (1, 1)}
    assert main(["forget-user", url, "ada"]) == 0  # again: nothing left, no error
    assert sum(json.loads(capsys.readouterr().out)["counts"].values()) == 0


def test_stats_prints_a_table_per_user_with_totals(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["stats", url]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("backend: ") and lines[1].startswith("size: ")
    assert lines[3].split() == [
        "user",
        "conversations",
        "messages",
        "entities",
        "preferences",
        "facts",
        "relationships",
        "traces",
    ]
    assert [line.split() for line in lines[5:7]] == [
        ["ada", "2", "3", "1", "0", "0", "-", "1"],
        ["bob", "1", "1", "0", "0", "0", "-", "0"],
    ]
    assert lines[-1].split() == ["total", "3", "4", "1", "0", "0", "0", "1"]


def test_stats_as_json_for_one_user(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["stats", url, "--user", "bob", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert found["users"] == [
        {
            "user_identifier": "bob",
            "conversations": 1,
            "messages": 1,
            "entities": 0,
            "preferences": 0,
            "facts": 0,
            "relationships": None,
            "traces": 0,
        }
    ]
    assert found["total"] is None and found["size_bytes"] > 0


def test_per_tenant_on_a_multi_tenant_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'tenants.db'}"
    _fill(url, multi_tenant=True)
    assert main(["stats", url, "--multi-tenant", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert found["scope"] == "tenant"
    assert [u["user_identifier"] for u in found["users"]] == ["ada", "bob"]
    assert main(["forget-user", url, "bob", "--multi-tenant"]) == 0
    assert json.loads(capsys.readouterr().out)["scope"] == "tenant"
    assert _counts(url, multi_tenant=True) == {"ada": (2, 3)}


def test_a_store_that_does_not_exist_is_a_usage_error_and_is_not_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "typo.db"
    for argv in (["stats", f"sqlite:///{missing}"], ["forget-user", f"sqlite:///{missing}", "a"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and str(missing) in err
    assert not missing.exists()


def test_a_bad_user_is_one_line_naming_the_argument(
    sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _counts(sqlite_url)
    for argv in (["forget-user", sqlite_url, "a\tb"], ["stats", sqlite_url, "--user", ""]):
        assert main(argv) == 1
        err = capsys.readouterr().err
        assert err.startswith("memory-core: error: ") and "user_identifier" in err
        assert err.count("\n") == 1
    assert _counts(sqlite_url) == before


def test_usage_errors_exit_2(sqlite_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["forget-user", sqlite_url]) == 2  # no user
    assert main(["stats", sqlite_url, "--bogus"]) == 2
    assert "usage" not in capsys.readouterr().out


def test_the_help_lists_both_commands(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "forget-user" in out and "stats" in out


def test_writers_that_kept_writing_print_the_report_then_fail(
    sqlite_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Writers racing the erasure cannot be timed in a test: the report says so here."""
    from memory_core import MemoryBackend

    real = MemoryBackend.forget_user

    async def racing(self: MemoryBackend, *args: Any, **kwargs: Any) -> Any:
        report = await real(self, *args, **kwargs)
        return report.model_copy(update={"writes_continued": True})

    monkeypatch.setattr(MemoryBackend, "forget_user", racing)
    assert main(["forget-user", sqlite_url, "ada"]) == 1
    captured = capsys.readouterr()
    assert json.loads(captured.out)["writes_continued"] is True
    assert captured.err.count("\n") == 1 and "run forget-user again" in captured.err
