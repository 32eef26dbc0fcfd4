"""The bench harness keeps working: ``--smoke`` sizes on every backend (the real Neo4j
of the run, the real NAMS-compatible server). Only the shape of the output is checked —
never a timing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.__main__ import BACKENDS, main, run
from bench.bolt import _schema_names
from bench.core import Selection
from bench.postgres import LANGCHAIN, LANGGRAPH
from bench.report import write
from bench.sizes import SMOKE
from memory_core_dev.neo4j_fixtures import Neo4jHandle
from memory_core_dev.postgres_server import PostgresHandle

pytestmark = [pytest.mark.anyio, pytest.mark.neo4j]

SUBJECT_STATS = {"min", "median", "max"}
# The long-term and reasoning groups have tests of their own (test_bench_long_term.py,
# test_bench_reasoning.py): run here too, they quadrupled this test's time.
SHORT_TERM = Selection(tuple(k for k in Selection.KEYS if k not in {"long_term", "reasoning"}))


@pytest.mark.neo4j_private
async def test_smoke_run_writes_json_and_markdown_with_expected_keys(
    neo4j_server: Neo4jHandle, postgres_server: PostgresHandle, tmp_path: Path
) -> None:
    neo4j_server.require_wipeable("it compares the whole database's schema before and after")
    databases = _databases(postgres_server.url)
    schema = await _peer_schema(neo4j_server.uri)
    result = await run(
        SMOKE,
        "smoke",
        list(BACKENDS),
        neo4j_uri=neo4j_server.uri,
        postgres_url=postgres_server.url,
        want=SHORT_TERM,
    )
    assert _databases(postgres_server.url) == databases, "the bench left a database behind"
    assert await _peer_schema(neo4j_server.uri) == schema, "the bench left the peer's schema"
    assert await _bench_conversations(neo4j_server) == 0, "the bench left data in Neo4j"
    json_path, md_path = write(result, tmp_path)
    data = json.loads(json_path.read_text(encoding="utf-8"))
    assert set(data) == {"meta", "workloads", "peak_rss_mb", "skipped"}
    assert {"mode", "repeats", "machine", "peer_version", "neo4j_version", "driver"} <= set(
        data["meta"]
    )
    assert data["meta"]["peer_version"] == "0.8.0"
    assert data["peak_rss_mb"] and all(v > 0 for v in data["peak_rss_mb"].values())
    seen = {(w["backend"], w["workload"]) for w in data["workloads"]}
    for backend in BACKENDS:
        for workload in (
            "single add_message",
            "newest-100 read",
            "text search (matches all)",
            "list_conversations",
            "agent turns (turn protocol)",
            "keyset paging (list_conversations_page)",
        ):
            assert (backend, workload) in seen
    assert ("bolt", "vector search (all sessions)") in seen
    for entry in data["workloads"]:
        assert {"backend", "workload", "size", "repeats", "subjects", "ratios"} <= set(entry)
        assert entry["repeats"] == SMOKE.repeats
        assert "memory-core" in entry["subjects"]
        for metrics in entry["subjects"].values():
            assert metrics and all(set(stats) == SUBJECT_STATS for stats in metrics.values())
    bolt_single = next(
        w
        for w in data["workloads"]
        if w["backend"] == "bolt" and w["workload"] == "single add_message"
    )
    assert set(bolt_single["subjects"]) == {"memory-core", "peer", "floor"}
    assert set(bolt_single["ratios"]) == {"vs_peer", "vs_floor"}
    nams_single = next(
        w
        for w in data["workloads"]
        if w["backend"] == "nams" and w["workload"] == "single add_message"
    )
    assert "requests_count" in nams_single["subjects"]["floor"]
    # Counts, unlike timings, are exact: a turn reaches the store at least once. (A Bolt
    # change once bypassed the counted methods and the report said 0 round trips.)
    for backend in BACKENDS:
        turns = next(
            w
            for w in data["workloads"]
            if w["backend"] == backend and w["workload"] == "agent turns (turn protocol)"
        )
        [(name, stats)] = [
            (k, v)
            for k, v in turns["subjects"]["memory-core"].items()
            if k in {"round_trips_per_turn", "requests_per_turn"}
        ]
        assert stats["min"] >= 1, (backend, name, stats)
    embedded_turns = next(
        w
        for w in data["workloads"]
        if w["backend"] == "embedded" and w["workload"] == "agent turns (turn protocol)"
    )["subjects"]["memory-core"]
    # a turn's read and writes run in the calling thread, and the total counts them too
    # (it once counted worker-thread calls only)
    assert embedded_turns["in_calling_thread_per_turn"]["min"] >= 1
    assert (
        embedded_turns["round_trips_per_turn"]["min"]
        >= embedded_turns["in_calling_thread_per_turn"]["max"]
    )
    # The NAMS bulk workload says how much of each side's time is the client's own.
    nams_bulk = next(
        w
        for w in data["workloads"]
        if w["backend"] == "nams" and w["workload"].startswith("batch ingest")
    )
    for subject in ("memory-core", "floor"):
        metrics = nams_bulk["subjects"][subject]
        assert metrics["client_cpu_ms"]["min"] > 0
        assert metrics["client_gc_ms"]["min"] >= 0
    # Keyset paging reports the first page, a deep one and their ratio (never a ratio to
    # the floor of a ratio).
    for backend in BACKENDS:
        keyset = next(
            w
            for w in data["workloads"]
            if w["backend"] == backend and w["workload"].startswith("keyset paging")
        )
        deep = f"page{SMOKE.keyset_deep}"
        assert {"page1_ms", f"{deep}_ms", f"{deep}_to_page1_ratio"} <= set(
            keyset["subjects"]["memory-core"]
        )
        assert f"{deep}_to_page1_ratio" not in keyset["ratios"]["vs_floor"]
    # PostgreSQL: both peers beside the floor where they have the operation, each ratio
    assert data["meta"]["postgres_version"] != "not run"
    assert set(data["meta"]["postgres_peers"]) == {LANGCHAIN, LANGGRAPH}
    postgres = {w["workload"]: w for w in data["workloads"] if w["backend"] == "postgres"}
    everyone = {"memory-core", LANGCHAIN, LANGGRAPH, "floor"}
    for name in ("single add_message", "newest-100 read"):
        assert set(postgres[name]["subjects"]) == everyone
        assert set(postgres[name]["ratios"]) == {f"vs_{s}" for s in everyone - {"memory-core"}}
    assert set(postgres["list_conversations"]["subjects"]) == everyone - {LANGCHAIN}
    assert set(postgres["text search (matches all)"]["subjects"]) == {"memory-core", "floor"}
    table = md_path.read_text(encoding="utf-8")
    assert "| backend | workload |" in table and "bolt" in table
    assert f"| ÷ {LANGCHAIN} |" in table and "| postgres | single add_message |" in table


async def _peer_schema(uri: str) -> set[tuple[str, str]]:
    """Constraints and indexes other than memory-core's own (which a store keeps)."""
    return {(kind, name) for kind, name in await _schema_names(uri) if "memory_core" not in name}


async def _bench_conversations(neo4j_server: Neo4jHandle) -> int:
    import neo4j

    driver = neo4j.AsyncGraphDatabase.driver(neo4j_server.uri, auth=neo4j_server.auth)
    try:
        records, _, _ = await driver.execute_query(
            "MATCH (n:Conversation) WHERE n.session_id STARTS WITH 'bench-' RETURN count(n) AS n"
        )
    finally:
        await driver.close()
    return int(records[0]["n"])


def _databases(url: str) -> set[str]:
    import psycopg

    with psycopg.connect(url) as conn:
        return {row[0] for row in conn.execute("SELECT datname FROM pg_database").fetchall()}


def test_command_line_rejects_unknown_workloads(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--smoke", "--workloads", "keyset,teleport"])
    assert "unknown workloads: teleport" in capsys.readouterr().err


async def test_a_selection_runs_only_its_workloads(tmp_path: Path) -> None:
    from bench.core import Selection

    result = await run(SMOKE, "smoke", ["embedded"], want=Selection(("keyset",)))
    assert {(w["backend"], w["workload"]) for w in result["workloads"]} == {
        ("embedded", "keyset paging (list_conversations_page)")
    }


def test_command_line_rejects_unknown_backends(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--smoke", "--only", "mongo"])
    assert "unknown backends" in capsys.readouterr().err
