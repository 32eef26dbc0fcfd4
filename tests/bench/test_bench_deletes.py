"""``python -m bench.deletes --smoke`` runs end to end and writes no results."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import deletes


def test_smoke_run_measures_and_writes_nothing(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(deletes, "RESULTS", tmp_path)
    assert deletes.main(["--smoke"]) == 0
    out = capsys.readouterr().out
    assert "| 500 | " in out and "| 1 in " in out
    assert list(tmp_path.iterdir()) == []
