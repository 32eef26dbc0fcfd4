"""``python -m bench.postgres_purge --smoke`` runs end to end on the run's PostgreSQL and
writes no results."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import postgres_purge
from memory_core_dev.postgres_server import PostgresHandle


def test_smoke_run_measures_and_writes_nothing(
    postgres_server: PostgresHandle,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setattr(postgres_purge, "RESULTS", tmp_path)
    monkeypatch.setenv("PG_BENCH_URL", postgres_server.url)
    assert postgres_purge.main(["--smoke"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| 2,000")]
    assert len(rows) == 1 and " → " in rows[0]
    assert list(tmp_path.iterdir()) == []
