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
