"""``memory-core preferences`` and ``memory-core facts``, run in-process through
``memory_core.cli.main`` on an embedded SQLite file, on the run's PostgreSQL and on
``memory://``: what each action prints (a table, JSON with ``--json``, one JSON object
for ``add`` and ``delete``), that it reads and changes the store, that another user's
records stay out, and one line on stderr with the usual exit codes for bad input, a
missing id and a store that does not exist; and ``memory-core stats`` counting them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory_core.cli import main
from memory_core.sync import open_backend
from memory_core_dev.postgres_schemas import new_schema, with_schema
from memory_core_dev.postgres_server import PostgresHandle


def _fill(url: str) -> None:
    """ada: two preferences and a fact; bob: one preference and one fact."""
    with open_backend(url) as memory:
        memory.add_preference(
            "food", "likes spicy dishes", context="at dinner", user_identifier="ada"
        )
        memory.add_preference("music", "listens to jazz", user_identifier="ada")
        memory.add_preference("food", "likes mild dishes", user_identifier="bob")
        memory.add_fact("Ada", "WORKS_AT", "Acme", valid_until="2030-01-01", user_identifier="ada")
        memory.add_fact("Bob", "WORKS_AT", "Initech", user_identifier="bob")


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'memory.db'}"
    _fill(url)
    return url


@pytest.fixture
def postgres_url(postgres_server: PostgresHandle) -> str:
    url = with_schema(postgres_server.url, new_schema("ltcli"))
    _fill(url)
    return url


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest) -> str:
    """A store holding :func:`_fill`'s records, embedded and on a real server."""
    return str(request.getfixturevalue(f"{request.param}_url"))


def _json(capsys: pytest.CaptureFixture[str]) -> object:
    captured = capsys.readouterr()
    assert captured.err == ""
    return json.loads(captured.out)


def test_list_prints_the_users_preferences_as_a_table(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["preferences", "list", url, "--user", "ada"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["id", "category", "preference", "context", "created_at"]
    assert set(lines[1]) <= {"-", " "}
    rows = lines[2:]
    assert len(rows) == 2
    assert "listens to jazz" in rows[0] and "likes spicy dishes  at dinner" in rows[1]


def test_search_and_json_keep_to_the_user(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["preferences", "search", url, "dishes", "--user", "bob", "--json"]) == 0
    found = _json(capsys)
    assert isinstance(found, list) and len(found) == 1
    assert found[0]["preference"] == "likes mild dishes" and found[0]["score"] > 0
    assert main(["preferences", "search", url, "dishes", "--category", "music"]) == 0
    assert capsys.readouterr().out == "no preferences\n"


def test_add_then_delete_a_preference(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["preferences", "add", url, "travel", "prefers trains", "--user", "ada"]
    assert main([*argv, "--context", "in Europe", "--confidence", "0.5"]) == 0
    added = _json(capsys)
    assert isinstance(added, dict)
    assert (added["category"], added["context"], added["confidence"]) == (
        "travel",
        "in Europe",
        0.5,
    )
    with open_backend(url) as memory:
        assert [p.id for p in memory.list_preferences("travel", user_identifier="ada")] == [
            added["id"]
        ]
    assert main(["preferences", "delete", url, added["id"], "--user", "bob"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "preference_id" in err and added["id"] in err
    assert main(["preferences", "delete", url, added["id"], "--user", "ada"]) == 0
    assert _json(capsys) == {"deleted": added["id"]}
    with open_backend(url) as memory:
        assert memory.list_preferences("travel") == []


def test_facts_about_search_add_and_delete(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["facts", "about", url, "ada", "--user", "ada"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["id", "subject", "predicate", "object", "valid_from", "valid_until"]
    assert lines[2].split()[1:] == ["Ada", "WORKS_AT", "Acme", "-", "2030-01-01T00:00:00+00:00"]
    assert main(["facts", "about", url, "ada", "--as-of", "2031-01-01T00:00:00Z"]) == 0
    assert capsys.readouterr().out == "no facts\n"
    assert main(["facts", "search", url, "initech", "--json"]) == 0
    found = _json(capsys)
    assert isinstance(found, list) and [f["subject"] for f in found] == ["Bob"]
    argv = ["facts", "add", url, "Ada", "LIVES_IN", "Lisbon", "--user", "ada"]
    assert main([*argv, "--valid-from", "2024-01-01T00:00:00Z"]) == 0
    added = _json(capsys)
    assert isinstance(added, dict) and added["valid_from"] == "2024-01-01T00:00:00Z"
    assert main(["facts", "delete", url, added["id"]]) == 0
    assert _json(capsys) == {"deleted": added["id"]}
    assert main(["facts", "delete", url, added["id"]]) == 1
    assert "fact_id" in capsys.readouterr().err


def test_stats_counts_preferences_and_facts(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["stats", url, "--json"]) == 0
    found = _json(capsys)
    assert isinstance(found, dict)
    rows = {r["user_identifier"]: (r["preferences"], r["facts"]) for r in found["users"]}
    assert rows == {"ada": (2, 1), "bob": (1, 1)}
    assert (found["total"]["preferences"], found["total"]["facts"]) == (3, 2)


@pytest.mark.parametrize(
    ("argv", "argument"),
    [
        (["preferences", "add", "{url}", "", "likes tea", "--user", "ada"], "category"),
        (["preferences", "add", "{url}", "food", "tea", "--confidence", "2"], "confidence"),
        (["preferences", "list", "{url}", "--user", "a\tb"], "user_identifier"),
        (["preferences", "search", "{url}", "tea", "--limit", "0"], "limit"),
        (["facts", "add", "{url}", "Ada", "IS", "x", "--valid-from", "soon"], "valid_from"),
        (
            [
                "facts",
                "add",
                "{url}",
                "Ada",
                "IS",
                "x",
                "--valid-from",
                "2025-01-01",
                "--valid-until",
                "2024-01-01",
            ],
            "valid_until",
        ),
        (["facts", "about", "{url}", "Ada", "--as-of", "yesterday"], "as_of"),
    ],
)
def test_bad_input_is_one_line_naming_the_argument_and_writes_nothing(
    sqlite_url: str, capsys: pytest.CaptureFixture[str], argv: list[str], argument: str
) -> None:
    with open_backend(sqlite_url) as memory:
        before = memory.stats()
    assert main([sqlite_url if arg == "{url}" else arg for arg in argv]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert captured.err.startswith("memory-core: error: ") and argument in captured.err
    with open_backend(sqlite_url) as memory:
        assert memory.stats().users == before.users


def test_on_memory_a_fresh_store_is_empty(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["preferences", "list", "memory://", "--user", "ada"]) == 0
    assert capsys.readouterr().out == "no preferences\n"
    assert main(["facts", "search", "memory://", "anything", "--json"]) == 0
    assert _json(capsys) == []
    assert main(["preferences", "add", "memory://", "food", "likes tea", "--user", "ada"]) == 0
    assert _json(capsys)["preference"] == "likes tea"  # type: ignore[index]


def test_a_store_that_does_not_exist_is_a_usage_error_and_is_not_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "typo.db"
    url = f"sqlite:///{missing}"
    for argv in (
        ["preferences", "list", url],
        ["preferences", "add", url, "food", "likes tea"],
        ["facts", "about", url, "Ada"],
    ):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and str(missing) in err
    assert not missing.exists()


def test_an_action_is_required(capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("preferences", "facts"):
        assert main([command]) == 2
        assert "ACTION" in capsys.readouterr().err


def test_a_multi_tenant_store_needs_the_user(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'tenants.db'}"
    with open_backend(url, multi_tenant=True) as memory:
        memory.add_preference("food", "likes tea", user_identifier="ada")
    assert main(["preferences", "list", url, "--multi-tenant"]) == 1
    assert "user_identifier" in capsys.readouterr().err
    assert main(["preferences", "list", url, "--multi-tenant", "--user", "bob", "--json"]) == 0
    assert _json(capsys) == []
    assert main(["preferences", "list", url, "--multi-tenant", "--user", "ada", "--json"]) == 0
    found = _json(capsys)
    assert isinstance(found, list) and [p["preference"] for p in found] == ["likes tea"]
