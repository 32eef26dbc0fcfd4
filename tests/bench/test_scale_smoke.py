"""``python -m bench --scale`` keeps working: two tiny steps on every store but NAMS over
Bolt (the run's real Neo4j, a NAMS server process, PostgreSQL), concurrency at 1 and 2
agents. Only the shape of the output is checked — every measurement of every subject, no
errors, the plots written — never a timing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.__main__ import main
from bench.plots import NAMES
from bench.scale import MEASUREMENTS, SMOKE
from bench.scale_run import run, write
from bench.scale_stores import STORES
from memory_core_dev.neo4j_fixtures import Neo4jHandle
from memory_core_dev.postgres_server import PostgresHandle

pytestmark = [pytest.mark.anyio, pytest.mark.neo4j]

# NAMS over Bolt is left out to save CI time: its pieces (the server over a URL, the Neo4j
# of the run) are those of NAMS over embedded and of Bolt
CI_STORES = [s for s in STORES if s != "nams-bolt"]
STEPS = [20, 60]
AGENTS = [1, 2]
# what each subject cannot do: NAMS has no search across sessions, the peer has no users,
# no search without an embedder, no entity lookup and no turn protocol
UNSUPPORTED = {
    "nams-embedded": ["search_user"],
    "nams-bolt": ["search_user"],
    "peer": ["search_session", "search_user", "find_entities", "turn"],
}
PNG = b"\x89PNG\r\n\x1a\n"


def _check_step(subject: str, entry: dict[str, object]) -> None:
    missing = UNSUPPORTED.get(subject, [])
    assert entry["unsupported"] == missing, subject
    for name in MEASUREMENTS:
        figures = entry[name]
        if name in missing:
            assert figures is None
            continue
        assert isinstance(figures, dict) and figures, (subject, name)
        assert all(isinstance(v, float) and v >= 0 for v in figures.values()), (subject, name)
    for name in ("newest_100", "turn"):
        figures = entry[name]
        if isinstance(figures, dict):
            assert set(figures) == {"p50_ms", "p95_ms", "p99_ms", "calls"}
    newest = entry["newest_100"]
    assert isinstance(newest, dict) and newest["calls"] == SMOKE.samples
    assert isinstance(entry["client_peak_rss_mb"], float) and entry["client_peak_rss_mb"] > 0


async def test_scale_smoke_measures_everything_on_every_store(
    neo4j_server: Neo4jHandle, postgres_server: PostgresHandle, tmp_path: Path
) -> None:
    result = await run(
        CI_STORES,
        STEPS,
        AGENTS,
        SMOKE,
        log=lambda line: None,
        neo4j=neo4j_server.uri,
        postgres_url=postgres_server.url,
    )
    written = write(result, tmp_path, "scale")
    data = json.loads((tmp_path / "scale.json").read_text(encoding="utf-8"))
    assert set(data) == {"meta", "steps", "concurrency", "targets"}
    assert data["meta"]["failed"] == {}
    assert data["meta"]["load_average_start"] and data["meta"]["expected_s_at_1m"] > 0
    assert set(data["steps"]) == {*CI_STORES, "peer"}
    for subject, entries in data["steps"].items():
        assert [e["messages"] for e in entries] == [19, 70]  # the plan's exact totals
        for entry in entries:
            _check_step(subject, entry)
    # NAMS reads the store embedded grew (one load), through a server over its file
    assert [e["loaded"] for e in data["steps"]["nams-embedded"]] == [0, 0]
    assert [e["loaded"] for e in data["steps"]["embedded"]] == [19, 51]
    for subject in ("embedded", "nams-embedded", "postgres"):
        assert all(e["store_bytes"] > 0 for e in data["steps"][subject])
    assert set(data["concurrency"]) == {*CI_STORES, "peer", "embedded (4 processes)"}
    for subject, levels in data["concurrency"].items():
        assert [level["agents"] for level in levels] == AGENTS, subject
        assert all(level["errors"] == 0 for level in levels), (subject, levels)
        assert all(level["turns"] >= level["agents"] for level in levels)
        if "processes" not in subject:
            assert all(level["client_cpu_s"] > 0 for level in levels), subject
    # the NAMS server's CPU is counted (Neo4j's and PostgreSQL's are not here: not ours)
    assert all(level["server_cpu_s"] >= 0 for level in data["concurrency"]["nams-embedded"])
    decided = {(t["target"], t["subject"]) for t in data["targets"]}
    assert ("newest-100 p95 last/first step", "bolt") in decided
    assert ("bolt turns/s at 32 agents / at 1", "bolt") not in decided  # 32 was not run
    assert any(t["target"].startswith("vs peer") for t in data["targets"])
    for name in NAMES:
        png = tmp_path / name
        assert png in written and png.read_bytes().startswith(PNG)
    assert "## Targets" in (tmp_path / "scale.md").read_text(encoding="utf-8")


def test_cli_scale_writes_json_markdown_and_plots(tmp_path: Path) -> None:
    argv = ["--scale", "--smoke", "--steps", "20", "--agents", "1", "--only", "embedded"]
    assert main([*argv, "--out", str(tmp_path), "--plots", str(tmp_path / "png")]) == 0
    data = json.loads((tmp_path / "scale.json").read_text(encoding="utf-8"))
    assert list(data["steps"]) == ["embedded"] and data["meta"]["steps"] == [20]
    _check_step("embedded", data["steps"]["embedded"][0])
    assert [level["errors"] for level in data["concurrency"]["embedded (4 processes)"]] == [0]
    # runs of separate processes merge into one result, the targets decided again
    other = {**data, "steps": {"copy": data["steps"]["embedded"]}, "concurrency": {}}
    (tmp_path / "other.json").write_text(json.dumps(other), encoding="utf-8")
    runs = f"{tmp_path / 'scale.json'},{tmp_path / 'other.json'}"
    assert main(["--scale", "--merge", runs, "--out", str(tmp_path), "--name", "merged"]) == 0
    merged = json.loads((tmp_path / "merged.json").read_text(encoding="utf-8"))
    assert list(merged["steps"]) == ["embedded", "copy"] and len(merged["meta"]["runs"]) == 2
    assert {t["subject"] for t in merged["targets"]} >= {"embedded", "copy"}
    assert (tmp_path / "merged-scale-size.png").read_bytes().startswith(PNG)
    assert sorted(p.name for p in (tmp_path / "png").iterdir()) == sorted(NAMES)
