"""``scripts/bench_plots.py``: a figure's title names the subjects it draws, no others."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _plots() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_plots", ROOT / "scripts/bench_plots.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_plots"] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("subjects", "title"),
    [
        (["memory-core", "floor"], "embedded: memory-core and the floor"),
        (
            ["memory-core", "floor", "peer"],
            "embedded: memory-core, the floor and the peer (neo4j-agent-memory)",
        ),
        (["memory-core", "floor", "lg"], "embedded: memory-core, the floor and lg"),
        (["memory-core"], "embedded: memory-core"),
    ],
)
def test_the_title_names_only_the_subjects_drawn(subjects: list[str], title: str) -> None:
    assert _plots()._title("embedded", subjects) == title
