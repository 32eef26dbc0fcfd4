"""Regenerate (or check) every generated part of the documentation, in one command:

- the capability table (docs/capabilities.md) from each backend's declared flags;
- the hook table (docs/writing-a-backend.md) from the docstrings of the store interface;
- the benchmark tables and plots (docs/benchmarks.md, docs/assets/bench-*.svg) from
  bench/results/*.json (scripts/bench_docs.py, scripts/bench_plots.py);
- the scenario catalogue (memory_core/conformance/SCENARIOS.md) from the scenarios.

python scripts/gen_docs.py --write   # rewrite them
python scripts/gen_docs.py --check   # exit 1 when any is stale (CI)
"""

from __future__ import annotations

import inspect
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # bench/ is a folder of the repository, not installed

from memory_core import Capabilities, store_class  # noqa: E402
from memory_core.capabilities import FLAG_DOCS, LIMIT_DOCS  # noqa: E402
from memory_core.conformance import catalog  # noqa: E402
from memory_core.interface import DEFAULTED_HOOKS, HOOKS_FOR_FLAG, Store  # noqa: E402
from memory_core.registry import built_in  # noqa: E402
from scripts import bench_docs  # noqa: E402
from scripts.bench_plots import plots as bench_plots  # noqa: E402

DOCS = ROOT / "docs"
RESULTS = ROOT / "bench" / "results"
ASSETS = DOCS / "assets"


def _cell(value: object) -> str:
    if isinstance(value, bool):
        return "yes" if value else "—"
    return "no cap" if value is None else str(value)


def capability_table() -> str:
    """The Markdown table: one row per flag and limit, one column per built-in backend
    (the registry's, in its order); a store that declares its flags per mode
    (``server_capabilities``: NAMS with server-issued ids) gets a second column."""
    caps: dict[str, Capabilities] = {}
    for scheme in built_in():
        store = store_class(scheme)
        caps[store.name] = store.capabilities
        other = getattr(store, "server_capabilities", None)
        if isinstance(other, Capabilities):
            caps[f"{store.name} (server ids)"] = other
    lines = [
        "| capability | meaning | " + " | ".join(caps) + " |",
        "| --- | --- | " + " | ".join("---" for _ in caps) + " |",
    ]
    for name, meaning in {**FLAG_DOCS, **LIMIT_DOCS}.items():
        cells = " | ".join(_cell(getattr(c, name)) for c in caps.values())
        lines.append(f"| `{name}` | {meaning} | {cells} |")
    return "\n".join(lines)


def hook_table() -> str:
    """The Markdown table of the store interface's hooks: when each is required, and its
    docstring folded onto one line."""
    required_by = {hook: flag for flag, hooks in HOOKS_FOR_FLAG.items() for hook in hooks}
    lines = ["| hook | required | what it must do |", "| --- | --- | --- |"]
    for name, member in vars(Store).items():
        abstract = getattr(member, "__isabstractmethod__", False)
        if not (abstract or name in required_by or name in DEFAULTED_HOOKS):
            continue
        if name in required_by:
            when = f"when `{required_by[name]}`"
        elif abstract:
            when = "always"
        else:
            when = "optional (has a default)"
        lines.append(f"| `{name}` | {when} | {_one_line(inspect.getdoc(member) or '')} |")
    return "\n".join(lines)


def _one_line(doc: str) -> str:
    """A reST docstring as one line of Markdown."""
    text = re.sub(r":\w+:`~?([^`]+)`", r"`\1`", " ".join(doc.split()))
    return text.replace("``", "`").replace("|", "/")


def _speed_runs() -> dict[str, dict[str, Any]]:
    return {name: bench_docs.load(name) for name in bench_docs.SPEED_RUNS}


def bench_speed() -> str:
    """How fast each backend is at each call (scripts/bench_docs.py)."""
    return bench_docs.speed_table(list(_speed_runs().values()))


def bench_neo4j() -> str:
    """memory-core on Neo4j beside neo4j-agent-memory."""
    runs = list(_speed_runs().values())
    return bench_docs.versus_table(runs, "bolt", bench_docs.NEO4J_ROWS, bench_docs.NEO4J_PEERS)


def bench_postgres() -> str:
    """memory-core on PostgreSQL beside langchain-postgres and LangGraph's store."""
    runs = list(_speed_runs().values())
    rows, peers = bench_docs.POSTGRES_ROWS, bench_docs.POSTGRES_PEERS
    return bench_docs.versus_table(runs, "postgres", rows, peers)


def bench_long_term() -> str:
    """Long-term memory on each backend beside its floor, and the targets."""
    return bench_docs.long_term_table(bench_docs.load(bench_docs.LONG_TERM_RUN))


def bench_long_term_neo4j() -> str:
    """memory-core's long-term adds on Neo4j beside neo4j-agent-memory's."""
    run = bench_docs.load(bench_docs.LONG_TERM_RUN)
    rows = bench_docs.LONG_TERM_ROWS
    return bench_docs.versus_table([run], "bolt", rows, bench_docs.NEO4J_PEERS)


def bench_reasoning() -> str:
    """Reasoning memory on each backend beside its floor, and the targets."""
    run = bench_docs.load(bench_docs.REASONING_RUN)
    return bench_docs.long_term_table(run, bench_docs.REASONING_ROWS)


def bench_reasoning_growth() -> str:
    """One tool's statistics as the store grows tenfold, beside the floor's."""
    return bench_docs.stats_growth_table(bench_docs.load(bench_docs.REASONING_RUN))


def bench_reasoning_neo4j() -> str:
    """memory-core's reasoning calls on Neo4j beside neo4j-agent-memory's."""
    run = bench_docs.load(bench_docs.REASONING_RUN)
    rows = bench_docs.REASONING_ROWS
    return bench_docs.versus_table([run], "bolt", rows, bench_docs.NEO4J_PEERS)


def bench_growth() -> str:
    """Each store as it grows (the scale run)."""
    return bench_docs.growth_table(bench_docs.load(bench_docs.SCALE_RUN))


def bench_agents() -> str:
    """Each store under concurrent agents (the scale run)."""
    return bench_docs.agents_table(bench_docs.load(bench_docs.SCALE_RUN))


def bench_runs() -> str:
    """The results files the page reports: when, at which sizes, with what software."""
    runs = {
        **_speed_runs(),
        **{
            name: bench_docs.load(name)
            for name in (bench_docs.LONG_TERM_RUN, bench_docs.REASONING_RUN)
        },
    }
    return bench_docs.runs_table(runs, bench_docs.load(bench_docs.SCALE_RUN))


def bench_plot_images() -> str:
    """One figure per backend of the speed runs, every workload with its spread."""
    images = []
    for name in bench_docs.SPEED_RUNS:
        path = RESULTS / name
        for backend in _backends(path):
            label = bench_docs.BACKENDS.get(backend, backend)
            images.append(
                f"![{label}: the time of each workload, memory-core beside what else ran]"
                f"(assets/{_plot_name(path, backend)})"
            )
    return "\n\n".join(images)


def _backends(path: Path) -> list[str]:
    rows = json.loads(path.read_text(encoding="utf-8"))["workloads"]
    return list(dict.fromkeys(row["backend"] for row in rows))


def _plot_name(path: Path, backend: str) -> str:
    return f"bench-{path.stem}-{backend}.svg"


def bench_figures() -> dict[Path, str]:
    """The speed runs' figures (one SVG per backend) under docs/assets/."""
    files = {}
    for name in bench_docs.SPEED_RUNS:
        path = RESULTS / name
        for backend, svg in bench_plots(json.loads(path.read_text(encoding="utf-8"))).items():
            files[ASSETS / _plot_name(path, backend)] = svg
    return files


# page -> (start marker, end marker, the generated body)
BLOCKS: dict[str, list[tuple[str, Callable[[], str]]]] = {
    "capabilities.md": [("capability-table", capability_table)],
    "writing-a-backend.md": [("hook-table", hook_table)],
    "benchmarks.md": [
        ("bench-speed", bench_speed),
        ("bench-plots", bench_plot_images),
        ("bench-growth", bench_growth),
        ("bench-agents", bench_agents),
        ("bench-neo4j", bench_neo4j),
        ("bench-postgres", bench_postgres),
        ("bench-long-term", bench_long_term),
        ("bench-long-term-neo4j", bench_long_term_neo4j),
        ("bench-reasoning", bench_reasoning),
        ("bench-reasoning-growth", bench_reasoning_growth),
        ("bench-reasoning-neo4j", bench_reasoning_neo4j),
        ("bench-runs", bench_runs),
    ],
}


def _replace(text: str, name: str, body: str) -> str:
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    head, found, rest = text.partition(start)
    if not found or end not in rest:
        raise SystemExit(f"gen_docs: markers {start} … {end} are missing")
    _, _, tail = rest.partition(end)
    return f"{head}{start}\n{body}\n{end}{tail}"


def generated() -> dict[Path, str]:
    """Each generated file's path and what it must contain now."""
    files = {catalog.CATALOG: catalog.render()}
    for page, blocks in BLOCKS.items():
        path = DOCS / page
        text = path.read_text(encoding="utf-8")
        for name, make in blocks:
            text = _replace(text, name, make())
        files[path] = text
    files.update(bench_figures())
    return files


def main(argv: list[str]) -> int:
    if argv not in (["--write"], ["--check"]):
        print(__doc__)
        return 2
    stale = []
    for path, fresh in generated().items():
        if path.exists() and path.read_text(encoding="utf-8") == fresh:
            continue
        stale.append(path.relative_to(ROOT))
        if argv == ["--write"]:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(fresh, encoding="utf-8")
    if argv == ["--check"] and stale:
        names = ", ".join(map(str, stale))
        print(f"stale generated docs ({names}): python scripts/gen_docs.py --write")
        return 1
    for path in stale:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
