"""The ``memory-core expire`` subcommand, run in-process through ``memory_core.cli.main``
on an embedded SQLite file: duration parsing, dry runs, real runs and refusals.

Conversations are made "old" without waiting: the clock expiry reads is moved ahead
(``memory_core.retention.cutoff_of`` is given a ``now`` in the future), so a cut-off
``--older-than`` before that moment lies after every conversation written here.
"""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memory_core import retention
from memory_core.cli import main
from memory_core.retention_cli import parse_duration
from memory_core.sync import open_backend


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("45s", timedelta(seconds=45)),
        ("90m", timedelta(minutes=90)),
        ("12h", timedelta(hours=12)),
        ("30d", timedelta(days=30)),
        ("2w", timedelta(weeks=2)),
        (" 7d ", timedelta(days=7)),
        ("999999999s", timedelta(seconds=999_999_999)),
    ],
)
def test_a_duration_is_a_whole_number_and_a_unit(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize(
    "text",
    ["", "30", "d", "0d", "07d", "-1d", "1.5h", "30 d", "30D", "1y", "1234567890s", "30days"],
)
def test_anything_else_is_not_a_duration(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="is not a duration"):
        parse_duration(text)


def _store(tmp_path: Path) -> str:
    """A SQLite store holding u1's sessions a1, a2 and u2's session b1."""
    url = f"sqlite:///{tmp_path / 'store.db'}"
    with open_backend(url) as memory:
        memory.add_message("a1", "user", "first words", user_identifier="u1")
        memory.add_message("a1", "assistant", "a reply", user_identifier="u1")
        memory.add_message("a2", "user", "second words", user_identifier="u1")
        memory.add_message("b1", "user", "other words", user_identifier="u2")
    return url


def _sessions(url: str) -> list[str]:
    with open_backend(url) as memory:
        return sorted(c.session_id for c in memory.list_conversations())


@pytest.fixture
def two_days_ahead(monkeypatch: pytest.MonkeyPatch) -> datetime:
    """Expiry's clock reads two days from now; returns that moment."""
    ahead = datetime.now(UTC) + timedelta(days=2)
    real = retention.cutoff_of

    def cutoff_of(older_than: object, now: datetime | None = None) -> datetime:
        return real(older_than, now or ahead)

    monkeypatch.setattr(retention, "cutoff_of", cutoff_of)
    return ahead


def _expire(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    assert main(["expire", *args]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1  # one JSON object on one line
    report: dict[str, Any] = json.loads(out)
    return report


def test_a_dry_run_reports_what_would_expire_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], two_days_ahead: datetime
) -> None:
    url = _store(tmp_path)
    report = _expire(capsys, url, "--older-than", "1d", "--dry-run")
    assert report["dry_run"] is True
    assert sorted(report["session_ids"]) == ["a1", "a2", "b1"]
    assert report["conversations"] == 3
    assert report["backend"] == "embedded"
    assert datetime.fromisoformat(report["cutoff"]) == two_days_ahead - timedelta(days=1)
    assert _sessions(url) == ["a1", "a2", "b1"]


def test_a_run_expires_the_conversations_idle_before_the_cutoff(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], two_days_ahead: datetime
) -> None:
    url = _store(tmp_path)
    kept = _expire(capsys, url, "--older-than", "3d")  # cut-off: yesterday
    assert kept["conversations"] == 0 and kept["session_ids"] == []
    assert _sessions(url) == ["a1", "a2", "b1"]
    done = _expire(capsys, url, "--older-than", "1d", "--batch-size", "1")
    assert done["dry_run"] is False
    assert sorted(done["session_ids"]) == ["a1", "a2", "b1"]
    assert _sessions(url) == []
    assert _expire(capsys, url, "--older-than", "1d")["conversations"] == 0


def test_user_limits_the_run_to_that_users_conversations(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], two_days_ahead: datetime
) -> None:
    url = _store(tmp_path)
    report = _expire(capsys, url, "--older-than", "1d", "--user", "u2")
    assert report["session_ids"] == ["b1"] and report["user_identifier"] == "u2"
    assert _sessions(url) == ["a1", "a2"]


def test_archive_counts_the_messages_it_wrote(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], two_days_ahead: datetime
) -> None:
    url = _store(tmp_path)
    archive = tmp_path / "expired.jsonl"
    report = _expire(capsys, url, "--older-than", "1d", "--user", "u1", "--archive", str(archive))
    assert report["messages"] == 3 and report["archive"] == str(archive)
    records = [json.loads(line)["record"] for line in archive.read_text().splitlines()]
    assert records.count("conversation") == 2 and records.count("message") == 3
    assert _sessions(url) == ["b1"]


def test_a_dry_run_writes_no_archive(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], two_days_ahead: datetime
) -> None:
    url = _store(tmp_path)
    archive = tmp_path / "expired.jsonl"
    report = _expire(
        capsys, url, "--older-than", "1d", "--user", "u1", "--archive", str(archive), "--dry-run"
    )
    assert report["conversations"] == 2 and report["messages"] is None
    assert report["archive"] is None and not archive.exists()
    assert _sessions(url) == ["a1", "a2", "b1"]


@pytest.mark.parametrize("age", ["thirty days", "0d", "-1d", "1y", "1.5h"])
def test_a_bad_older_than_is_a_usage_error_on_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], age: str
) -> None:
    url = _store(tmp_path)
    assert main(["expire", url, f"--older-than={age}"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1
    assert "--older-than" in captured.err and "is not a duration" in captured.err
    assert _sessions(url) == ["a1", "a2", "b1"]


def test_older_than_is_required(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["expire", "memory://"]) == 2
    assert "--older-than" in capsys.readouterr().err


def test_a_refused_run_exits_1_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = _store(tmp_path)
    assert main(["expire", url, "--older-than", "1d", "--multi-tenant"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("memory-core: error: user_identifier:") and err.count("\n") == 1
    assert main(["expire", url, "--older-than", "1d", "--batch-size", "0"]) == 1
    assert "batch_size" in capsys.readouterr().err
    assert _sessions(url) == ["a1", "a2", "b1"]
