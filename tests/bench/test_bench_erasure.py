"""``python -m bench.erasure --smoke`` runs end to end on the embedded backend and writes
no results."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import erasure


def test_smoke_run_measures_and_writes_nothing(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(erasure, "RESULTS", tmp_path)
    assert erasure.main(["--smoke", "--only", "embedded"]) == 0
    out = capsys.readouterr().out
    assert "| embedded | 2,000 | 200 |" in out
    assert list(tmp_path.iterdir()) == []


def _figures(backend: str, total: int, forget: float) -> erasure.Figures:
    return erasure.Figures(
        backend=backend,
        total_messages=total,
        user_messages=10,
        load_seconds=1.0,
        forget_seconds=forget,
        counts={"messages": 10},
        adds_during=3,
        during_p50_ms=1.0,
        during_p99_ms=2.0,
        during_max_ms=3.0,
        baseline_p50_ms=1.0,
        baseline_p99_ms=2.0,
    )


def test_results_keep_one_row_per_backend_and_size(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A run at another size keeps the other sizes' rows (the growth curve); a run at the
    same size replaces its row."""
    monkeypatch.setattr(erasure, "RESULTS", tmp_path)
    erasure._save("run a", 1.0, [_figures("bolt", 300_000, 2.0)])
    erasure._save("run b", 1.0, [_figures("bolt", 100_000, 1.0), _figures("embedded", 10, 5.0)])
    erasure._save("run c", 1.0, [_figures("bolt", 300_000, 3.0)])
    table = (tmp_path / "erasure.md").read_text()
    rows = [line for line in table.splitlines() if line.startswith("| bolt")]
    assert [row.split(" | ")[1] for row in rows] == ["100,000", "300,000"]
    assert "| 3.0 s |" in rows[1] and "2.0 s" not in table
    assert "- bolt 300,000: `run c`" in table and "| embedded | 10 |" in table
