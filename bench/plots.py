"""PNG plots of a scale run (``bench/results/scale.json``): latency and throughput against
store size and against the number of concurrent agents, one line per backend and the peer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt

LATENCIES = (
    ("newest_100", "p95_ms", "newest-100 read"),
    ("search_session", "p95_ms", "search in one session"),
    ("search_user", "p95_ms", "search across a user's sessions"),
    ("find_entities", "p95_ms", "find_entities"),
    ("list_pages", "deep_p95_ms", "list_conversations, deep page"),
    ("turn", "p95_ms", "one agent turn (turn protocol)"),
)
INGEST = (("ingest_single", "single add_message"), ("ingest_batch", "batches"))
NAMES = ("scale-size.png", "scale-ingest.png", "scale-concurrency.png")


def _styles(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """One colour per subject in every figure (a subject missing from one panel must not
    shift the others' colours); the peer dashed."""
    names = list(dict.fromkeys([*result["steps"], *result["concurrency"]]))
    return {
        name: {"color": f"C{i % 10}", "marker": "o", "linestyle": "--" if name == "peer" else "-"}
        for i, name in enumerate(names)
    }


def _series(steps: list[dict[str, Any]], key: str, field: str) -> tuple[list[int], list[float]]:
    xs, ys = [], []
    for entry in steps:
        value = entry.get(key)
        if isinstance(value, dict) and value.get(field) is not None:
            xs.append(entry["messages"])
            ys.append(value[field])
    return xs, ys


def _save(figure: Any, path: Path) -> Path:
    # fixed margins: tight_layout took most of the run's plotting time
    figure.subplots_adjust(left=0.07, right=0.98, top=0.92, bottom=0.12, hspace=0.45, wspace=0.3)
    figure.savefig(path, dpi=72, metadata={"Software": None})
    plt.close(figure)
    return path


def size_plot(result: dict[str, Any], path: Path) -> Path:
    """p95 latency of each read against messages in the store."""
    figure, grid = plt.subplots(2, 3, figsize=(12, 6.5))
    style = _styles(result)
    for axes, (key, field, title) in zip(grid.flat, LATENCIES, strict=True):
        for name, steps in result["steps"].items():
            xs, ys = _series(steps, key, field)
            if xs:
                axes.plot(xs, ys, label=name, **style[name])
        axes.set(title=title, xscale="log", yscale="log", xlabel="messages", ylabel="p95 ms")
        axes.grid(True, which="both", alpha=0.3)
    grid.flat[0].legend(fontsize="small")
    return _save(figure, path)


def ingest_plot(result: dict[str, Any], path: Path) -> Path:
    """Ingest throughput (messages per second) against messages in the store."""
    figure, grid = plt.subplots(1, 2, figsize=(11, 3.8))
    style = _styles(result)
    for axes, (key, title) in zip(grid, INGEST, strict=True):
        for name, steps in result["steps"].items():
            xs, ys = _series(steps, key, "msgs_per_s")
            if xs:
                axes.plot(xs, ys, label=name, **style[name])
        axes.set(title=f"ingest: {title}", xscale="log", yscale="log", xlabel="messages")
        axes.set_ylabel("messages / s (higher is better)")
        axes.grid(True, which="both", alpha=0.3)
    grid[0].legend(fontsize="small")
    return _save(figure, path)


def concurrency_plot(result: dict[str, Any], path: Path) -> Path:
    """Turns per second and p95 turn latency against concurrent agents."""
    figure, grid = plt.subplots(1, 2, figsize=(11, 3.8))
    style = _styles(result)
    for name, levels in result["concurrency"].items():
        xs = [level["agents"] for level in levels]
        grid[0].plot(xs, [level["turns_per_s"] for level in levels], label=name, **style[name])
        grid[1].plot(xs, [level["p95_ms"] for level in levels], label=name, **style[name])
    grid[0].set(title="throughput", ylabel="turns / s (higher is better)")
    grid[1].set(title="p95 turn latency", ylabel="ms", yscale="log")
    for axes in grid:
        axes.set(xscale="log", xlabel="concurrent agents")
        axes.grid(True, which="both", alpha=0.3)
    grid[0].legend(fontsize="small")
    return _save(figure, path)


def write_plots(result: dict[str, Any], folder: Path, prefix: str = "") -> list[Path]:
    """The three PNGs of ``result`` in ``folder`` (names :data:`NAMES`, after ``prefix``)."""
    folder.mkdir(parents=True, exist_ok=True)
    size, ingest, concurrency = (folder / f"{prefix}{name}" for name in NAMES)
    return [
        size_plot(result, size),
        ingest_plot(result, ingest),
        concurrency_plot(result, concurrency),
    ]
