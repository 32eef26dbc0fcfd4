"""The tables of docs/benchmarks.md, one per question a user asks, from the bench's
results (bench/results/*.json); scripts/gen_docs.py writes them into the page.

- How fast is each backend at each common call? (``SPEED_RUNS``), with memory-core's
  time over the floor's: the same work written directly against the driver.
- How does a store hold up as it grows, and as agents are added? (``SCALE_RUN``)
- How does memory-core compare with the library one would use instead, on Neo4j and
  on PostgreSQL? (the peers of ``SPEED_RUNS``)
- How fast is long-term memory (preferences, facts, relationships), against the targets
  of issue 50? (``LONG_TERM_RUN``, ``long_term_table``)
- How fast is reasoning memory (steps, tool statistics, similar traces), against the
  targets of issue 51, and does one tool's statistics grow with the store?
  (``REASONING_RUN``, ``long_term_table`` with ``REASONING_ROWS``, ``stats_growth_table``)
- Which runs, when, with what software (``runs_table``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TIMES = "\N{MULTIPLICATION SIGN}"
RESULTS = Path(__file__).resolve().parent.parent / "bench" / "results"
# The runs the page reports: SQLite, Neo4j and NAMS at the full sizes, PostgreSQL at the
# default sizes (postgres.json has the full sizes but ran on a busy machine).
SPEED_RUNS = ("latest.json", "postgres-default.json")
SCALE_RUN = "scale.json"
LONG_TERM_RUN = "long-term.json"
REASONING_RUN = "reasoning.json"

BACKENDS = {
    "embedded": "SQLite (embedded)",
    "postgres": "PostgreSQL",
    "bolt": "Neo4j (Bolt)",
    "nams": "NAMS (HTTP)",
}
SCALE_SUBJECTS = {
    "embedded": "SQLite (embedded)",
    "embedded (4 processes)": "SQLite, agents in 4 processes",
    "postgres": "PostgreSQL",
    "bolt": "Neo4j (Bolt)",
    "nams-embedded": "NAMS over SQLite",
    "nams-bolt": "NAMS over Neo4j",
    "peer": "neo4j-agent-memory (Neo4j)",
}
NEO4J_PEERS = {"peer": "neo4j-agent-memory"}
POSTGRES_PEERS = {"langchain-postgres": "langchain-postgres", "langgraph store": "LangGraph store"}


@dataclass(frozen=True)
class Row:
    """A call the tables report: its label, the bench workloads that measure it (one
    name per backend where they differ), the metric and, for reads, the size."""

    label: str
    workloads: tuple[str, ...]
    metric: str
    size: str | None = None


ADD_ONE = Row("add one message (p50)", ("single add_message",), "p50_ms")
ADD_100 = Row(
    "add 100 messages a call (throughput)",
    ("batch ingest (batch 100)", "batch ingest (bulk 100)"),
    "msgs_per_s",
)
ADD_500 = Row("add 500 messages a call (throughput)", ("batch ingest (batch 500)",), "msgs_per_s")
NEWEST = "newest-100 read"
READ_1K = Row("read the newest 100 of a 1,000-message session", (NEWEST,), "median_ms", "1000")
READ_10K = Row("read the newest 100 of a 10,000-message session", (NEWEST,), "median_ms", "10000")
READ_100K = Row(
    "read the newest 100 of a 100,000-message session", (NEWEST,), "median_ms", "100000"
)
SEARCH = Row(
    "search a 10,000-message session, every message matching (top 10)",
    ("text search (matches all)",),
    "median_ms",
    "10000",
)
LIST = Row("list 1,000 conversations", ("list_conversations",), "median_ms")
TURN = Row("one agent turn (turn protocol)", ("agent turns (turn protocol)",), "ms_per_turn")
LONG_TERM_ROWS = (
    Row("add a preference (p50)", ("add_preference",), "p50_ms"),
    Row("add a fact (p50)", ("add_fact",), "p50_ms"),
    Row(
        "search one user's 10,000 preferences (top 10)",
        ("search_preferences (one user's)",),
        "median_ms",
        "10000",
    ),
    Row(
        "related entities to depth 2 in a 10,000-entity graph",
        ("related_entities (depth 2)",),
        "median_ms",
        "10000",
    ),
)
LONG_TERM_BACKENDS = ("embedded", "postgres", "bolt")
_FULL_STORE = "10000 traces"
REASONING_ROWS = (
    Row("add a step with one tool call (p50)", ("add_step + record_tool_call",), "p50_ms"),
    Row(
        "statistics of a tool called in every trace (10,000 of 100,000 calls)",
        ("tool_stats (common tool)",),
        "median_ms",
        _FULL_STORE,
    ),
    Row(
        "statistics of a tool called 1,000 times (among 100,000 calls)",
        ("tool_stats (rare tool)",),
        "median_ms",
        _FULL_STORE,
    ),
    Row(
        "statistics of every tool (100,000 calls)",
        ("tool_stats (all tools)",),
        "median_ms",
        _FULL_STORE,
    ),
    Row(
        "similar traces among 10,000 (top 5)", ("similar_traces (top 5)",), "median_ms", _FULL_STORE
    ),
)
# (label, workload) of the statistics timed at a tenth of the traces and at all of them
STATS_GROWTH = (
    ("a tool called in every trace", "tool_stats (common tool)"),
    ("a tool called 1,000 times", "tool_stats (rare tool)"),
)
SPEED_ROWS = (ADD_ONE, ADD_100, ADD_500, READ_1K, SEARCH, LIST, TURN)
NEO4J_ROWS = (ADD_ONE, ADD_100, ADD_500, READ_1K, READ_10K, READ_100K, LIST)
POSTGRES_ROWS = (ADD_ONE, ADD_100, ADD_500, READ_1K, READ_10K)

# (header, the step's figure, its unit) for the growth table
GROWTH = (
    ("newest 100, p95", "newest_100", "p95_ms", "ms"),
    ("search in one session, p95", "search_session", "p95_ms", "ms"),
    ("search all of a user's sessions, p95", "search_user", "p95_ms", "ms"),
    ("a deep page of a user's conversations, p95", "list_pages", "deep_p95_ms", "ms"),
    ("adds in batches of 100", "ingest_batch", "msgs_per_s", "msgs/s"),
    ("single adds", "ingest_single", "msgs_per_s", "msgs/s"),
)


def load(name: str) -> dict[str, Any]:
    """One results file of bench/results/."""
    data: dict[str, Any] = json.loads((RESULTS / name).read_text(encoding="utf-8"))
    return data


def number(value: float) -> str:
    """Three significant digits, thousands separated: 0.0705, 3.85, 24,500."""
    if value >= 1000:
        return f"{float(f'{value:.3g}'):,.0f}"
    return f"{value:.3g}"


def _figure(value: float, metric: str) -> str:
    return number(value) + (" msgs/s" if metric == "msgs_per_s" else " ms")


def _time_metric(metric: str) -> str:
    """The time metric beside a throughput: ratios are always of times."""
    return "ms" if metric == "msgs_per_s" else metric


def _entry(runs: Iterable[dict[str, Any]], backend: str, row: Row) -> dict[str, Any] | None:
    for run in runs:
        for entry in run["workloads"]:
            if (
                entry["backend"] == backend
                and entry["workload"] in row.workloads
                and row.size in (None, entry["size"])
            ):
                return dict(entry)
    return None


def _median(entry: dict[str, Any], subject: str, metric: str) -> float | None:
    stats = entry["subjects"].get(subject, {}).get(metric)
    return None if stats is None else float(stats["median"])


def _ratio(entry: dict[str, Any], subject: str, metric: str) -> str:
    key = {"floor": "vs_floor", "peer": "vs_peer"}.get(subject, f"vs_{subject}")
    stats = entry["ratios"].get(key, {}).get(_time_metric(metric))
    return "—" if stats is None else f"{number(stats['median'])}{TIMES}"


def _table(head: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def speed_table(runs: list[dict[str, Any]]) -> str:
    """Each call on each backend: memory-core's median, and in brackets its time over
    the floor's (the median of the per-repeat ratios)."""
    rows = []
    for row in SPEED_ROWS:
        cells = [row.label]
        for backend in BACKENDS:
            entry = _entry(runs, backend, row)
            value = None if entry is None else _median(entry, "memory-core", row.metric)
            if entry is None or value is None:
                cells.append("—")
                continue
            ratio = _ratio(entry, "floor", row.metric)
            cells.append(_figure(value, row.metric) + ("" if ratio == "—" else f" ({ratio})"))
        rows.append(cells)
    return _table(["call", *BACKENDS.values()], rows)


def versus_table(
    runs: list[dict[str, Any]], backend: str, rows: tuple[Row, ...], peers: dict[str, str]
) -> str:
    """memory-core on ``backend`` beside each peer: the peer's median and memory-core's
    time over the peer's; a call no peer has is left out."""
    lines = []
    for row in rows:
        entry = _entry(runs, backend, row)
        ours = None if entry is None else _median(entry, "memory-core", row.metric)
        if entry is None or ours is None:
            continue
        cells = [row.label, _figure(ours, row.metric)]
        for subject in peers:
            theirs = _median(entry, subject, row.metric)
            shown = "—" if theirs is None else _figure(theirs, row.metric)
            cells += [shown, "—" if theirs is None else _ratio(entry, subject, row.metric)]
        if any(cell != "—" for cell in cells[2:]):
            lines.append(cells)
    head = ["call", "memory-core"]
    for name in peers.values():
        head += [name, "÷"]
    return _table(head, lines)


def long_term_table(run: dict[str, Any], table: tuple[Row, ...] = LONG_TERM_ROWS) -> str:
    """Each long-term (or reasoning: ``table``) call on each backend: memory-core's median
    and in brackets its time over the floor's, then the target (at most that many times
    the floor's)."""
    rows = []
    for row in table:
        cells = [row.label]
        target = None
        for backend in LONG_TERM_BACKENDS:
            entry = _entry([run], backend, row)
            value = None if entry is None else _median(entry, "memory-core", row.metric)
            if entry is None or value is None:
                cells.append("—")
                continue
            target = entry["extra"].get("target_vs_floor", target)
            cells.append(f"{_figure(value, row.metric)} ({_ratio(entry, 'floor', row.metric)})")
        cells.append("—" if target is None else f"≤ {number(target)}{TIMES}")
        rows.append(cells)
    head = ["call", *(BACKENDS[b] for b in LONG_TERM_BACKENDS), "target"]
    return _table(head, rows)


def stats_growth_table(run: dict[str, Any]) -> str:
    """One tool's statistics at a tenth of the traces and at all of them (1,000 → 10,000
    traces at ``--full``), memory-core's and the floor's medians, per backend."""
    lines = []
    for label, workload in STATS_GROWTH:
        for subject in ("memory-core", "floor"):
            cells = [f"{label}: {subject}"]
            for backend in LONG_TERM_BACKENDS:
                entries = [
                    e
                    for e in run["workloads"]
                    if e["backend"] == backend and e["workload"] == workload
                ]
                values = [_median(e, subject, "median_ms") for e in entries]
                shown = " → ".join("—" if v is None else number(v) for v in values)
                cells.append(f"{shown} ms" if values else "—")
            lines.append(cells)
    head = ["statistics of one tool", *(BACKENDS[b] for b in LONG_TERM_BACKENDS)]
    return _table(head, lines)


def growth_table(scale: dict[str, Any]) -> str:
    """Each store's figures at every step of the scale run (``a → b → c``)."""
    lines = []
    for subject, label in SCALE_SUBJECTS.items():
        steps = scale["steps"].get(subject)
        if not steps:
            continue
        cells = [label]
        for _, key, metric, unit in GROWTH:
            values = [(step.get(key) or {}).get(metric) for step in steps]
            shown = " → ".join("—" if v is None else number(v) for v in values)
            cells.append("—" if all(v is None for v in values) else f"{shown} {unit}")
        lines.append(cells)
    head = ["store (10k → 100k → 1M messages)", *(header for header, *_ in GROWTH)]
    return _table(head, lines)


def agents_table(scale: dict[str, Any]) -> str:
    """Turns a second (and a turn's p95) at each number of agents at once, and errors."""
    agents = scale["meta"]["agents"]
    lines = []
    for subject, label in SCALE_SUBJECTS.items():
        levels = {level["agents"]: level for level in scale["concurrency"].get(subject, [])}
        if not levels:
            continue
        cells = [label]
        for count in agents:
            level = levels.get(count)
            if level is None:
                cells.append("—")
            else:
                cells.append(f"{number(level['turns_per_s'])} ({number(level['p95_ms'])} ms)")
        cells.append(str(sum(level["errors"] for level in levels.values())))
        lines.append(cells)
    head = [f"{count} agent{'s' if count > 1 else ''}" for count in agents]
    return _table(["store", *head, "errors"], lines)


def runs_table(runs: dict[str, dict[str, Any]], scale: dict[str, Any]) -> str:
    """When each results file was recorded, at which sizes, with what software."""
    lines = []
    for name, run in runs.items():
        meta = run["meta"]
        software = [f"Python {meta['python']}"]
        if "embedded" in meta["backends"]:
            software.append(f"SQLite {meta['sqlite_version']}")
        if "bolt" in meta["backends"]:
            software.append(f"Neo4j {meta['neo4j_version']} (driver {meta['driver']})")
            software.append(f"neo4j-agent-memory {meta['peer_version']}")
        if "postgres" in meta["backends"]:
            software.append(f"PostgreSQL {meta['postgres_version'].split(' ')[0]}")
            # "langchain-postgres 0.0.19 PostgresChatMessageHistory": the name and version
            software += [" ".join(peer.split()[:2]) for peer in meta["postgres_peers"].values()]
        sizes = f"`{meta['mode']}`"
        lines.append([f"`bench/results/{name}`", meta["finished"][:10], sizes, "; ".join(software)])
    meta = scale["meta"]
    steps = " → ".join(f"{step:,}" for step in meta["steps"])
    agents = ", ".join(str(count) for count in meta["agents"])
    lines.append(
        [
            f"`bench/results/{SCALE_RUN}`",
            meta["started"][:10],
            f"{steps} messages; {agents} agents",
            f"Python {meta['python']}",
        ]
    )
    return _table(["results", "recorded", "sizes", "software"], lines)
