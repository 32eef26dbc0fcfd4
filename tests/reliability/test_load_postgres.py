"""The load script over PostgreSQL: two ``memory-core serve`` processes on one database,
concurrent clients from a separate process, at the CI profile (the full figures with 1, 2
and 3 processes are in RELIABILITY.md). Correctness only: every client finished, 0
errors, nothing acknowledged lost or doubled, each client's conversation read back
through a server it mostly did not write through."""

from __future__ import annotations

from memory_core_dev.postgres_server import PostgresHandle

from .test_load import check, run_load

CLIENTS = 100
REQUESTS = 4


def test_load_over_postgres_with_two_server_processes(postgres_server: PostgresHandle) -> None:
    report = run_load(
        *("--backend-url", postgres_server.url, "--servers", "2"),
        *("--clients", str(CLIENTS), "--requests", str(REQUESTS)),
    )
    assert report["servers"] == 2
    check(report, CLIENTS, REQUESTS)
    assert report["errors"] == {}, "an overload answer over PostgreSQL"
