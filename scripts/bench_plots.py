"""SVG plots of a bench results file (bench/results/*.json), for docs/benchmarks.md.

One figure per backend: the time of every subject (memory-core, the floor,
the peer, neo4j-agent-memory, where it ran) for each workload, in the workload's own
time metric (p50 of single calls, median of reads and searches, a whole batch, one agent
turn: named on each row), median of the repeats on a log scale, with their spread (min to
max) as error bars. The SVG is byte-for-byte reproducible for one
matplotlib version (no date, a fixed hash salt), so ``gen_docs.py --check`` can compare it;
the version is pinned in the ``docs`` extra.
"""

from __future__ import annotations

import io
from typing import Any

import matplotlib

matplotlib.use("svg")

import matplotlib.pyplot as plt

# A workload's time metric: the first of these its results have.
METRICS = ("p50_ms", "median_ms", "ms", "ms_per_turn")
# The order subjects are drawn in, then any other subject by name.
SUBJECTS = ("memory-core", "floor", "peer")


def _subjects(rows: list[dict[str, Any]]) -> list[str]:
    seen = {name for row in rows for name in row["subjects"]}
    known = [s for s in SUBJECTS if s in seen]
    return known + sorted(seen - set(known))


def _metric(row: dict[str, Any]) -> str | None:
    found = {key for numbers in row["subjects"].values() for key in numbers}
    return next((m for m in METRICS if m in found), None)


def _title(backend: str, subjects: list[str]) -> str:
    """Names only the subjects the figure draws (no peer runs on some backends)."""
    spoken = {"floor": "the floor", "peer": "the peer (neo4j-agent-memory)"}
    names = [spoken.get(s, s) for s in subjects]
    if len(names) > 1:
        names[-2:] = [f"{names[-2]} and {names[-1]}"]
    return f"{backend}: {', '.join(names)}"


def plot(backend: str, rows: list[dict[str, Any]]) -> str:
    """The SVG text of one backend's figure."""
    plt.rcParams["svg.hashsalt"] = "memory-core-bench"
    plt.rcParams["svg.fonttype"] = "none"  # text stays text: smaller, searchable
    rows = [row for row in rows if _metric(row) is not None]
    labels = [f"{row['workload']} {row['size']} [{_metric(row)}]" for row in rows]
    subjects = _subjects(rows)
    width = 0.8 / len(subjects)
    figure, axes = plt.subplots(figsize=(10, 0.5 * len(rows) + 1.6))
    for i, subject in enumerate(subjects):
        centre, low, high, where = [], [], [], []
        for y, row in enumerate(rows):
            p50 = row["subjects"].get(subject, {}).get(_metric(row))
            if not isinstance(p50, dict):
                continue
            where.append(y + (i - (len(subjects) - 1) / 2) * width)
            centre.append(p50["median"])
            low.append(p50["median"] - p50["min"])
            high.append(p50["max"] - p50["median"])
        axes.barh(where, centre, height=width, xerr=[low, high], label=subject, capsize=2)
    axes.set_yticks(range(len(rows)), labels)
    axes.invert_yaxis()
    axes.set_xscale("log")
    axes.set_xlabel("ms, in the row's metric (median of the repeats; bars: min to max)")
    axes.set_title(_title(backend, subjects))
    axes.legend(loc="lower right", fontsize="small")
    figure.tight_layout()
    out = io.StringIO()
    figure.savefig(out, format="svg", metadata={"Date": None, "Creator": None})
    plt.close(figure)
    return out.getvalue()


def plots(results: dict[str, Any]) -> dict[str, str]:
    """Backend name → the SVG of its figure, for every backend in ``results``."""
    by_backend: dict[str, list[dict[str, Any]]] = {}
    for row in results["workloads"]:
        by_backend.setdefault(row["backend"], []).append(row)
    return {backend: plot(backend, rows) for backend, rows in by_backend.items()}
