"""The Markdown of a scale run: the conditions, one table per measure (a row per subject,
a column per step), the concurrency table and the targets."""

from __future__ import annotations

from typing import Any

ROWS = (
    ("load (bulk growth)", None, "load_msgs_per_s", "msgs/s"),
    ("ingest: single adds", "ingest_single", "msgs_per_s", "msgs/s"),
    ("ingest: batches", "ingest_batch", "msgs_per_s", "msgs/s"),
    ("newest-100 p50", "newest_100", "p50_ms", "ms"),
    ("newest-100 p95", "newest_100", "p95_ms", "ms"),
    ("newest-100 p99", "newest_100", "p99_ms", "ms"),
    ("search one session p95", "search_session", "p95_ms", "ms"),
    ("search a user's sessions p95", "search_user", "p95_ms", "ms"),
    ("find_entities p95", "find_entities", "p95_ms", "ms"),
    ("list page 1 p95", "list_pages", "page1_p95_ms", "ms"),
    ("list deep page p95", "list_pages", "deep_p95_ms", "ms"),
    ("agent turn p95", "turn", "p95_ms", "ms"),
    ("store on disk", None, "store_bytes", "MB"),
    ("client peak RSS", None, "client_peak_rss_mb", "MiB"),
)


def _cell(entry: dict[str, Any], key: str | None, field: str, unit: str) -> str:
    value = entry.get(field) if key is None else (entry.get(key) or {}).get(field)
    if value is None:
        return "—"
    if unit == "MB":
        value = value / 1e6
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def step_table(steps: dict[str, list[dict[str, Any]]]) -> str:
    """One row per measure and subject, one column per step."""
    sizes = sorted({e["messages"] for entries in steps.values() for e in entries})
    head = "| measure | subject | " + " | ".join(f"{n:,} msgs" for n in sizes) + " |"
    lines = [head, "|---|---|" + "---:|" * len(sizes)]
    for label, key, field, unit in ROWS:
        for subject, entries in steps.items():
            by_size = {e["messages"]: e for e in entries}
            cells = [_cell(by_size[n], key, field, unit) if n in by_size else "" for n in sizes]
            if any(c not in ("—", "") for c in cells):
                lines.append(f"| {label} ({unit}) | {subject} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _cpu_ms(entry: dict[str, Any], key: str) -> str:
    """CPU milliseconds per turn of ``key`` (client or server), or a dash."""
    value = entry.get(key)
    return "-" if value is None or not entry["turns"] else f"{value * 1000 / entry['turns']:.3g}"


def concurrency_table(levels: dict[str, list[dict[str, Any]]]) -> str:
    lines = [
        "| subject | agents | turns | turns/s | p50 ms | p95 ms | errors "
        "| client CPU ms/turn | server CPU ms/turn |",
        "|---|" + "---:|" * 8,
    ]
    for subject, entries in levels.items():
        for e in entries:
            lines.append(
                f"| {subject} | {e['agents']} | {e['turns']} | {e['turns_per_s']:.1f} | "
                f"{e['p50_ms']:.3g} | {e['p95_ms']:.3g} | {e['errors']} | "
                f"{_cpu_ms(e, 'client_cpu_s')} | {_cpu_ms(e, 'server_cpu_s')} |"
            )
    return "\n".join(lines)


def target_table(targets: list[dict[str, Any]]) -> str:
    lines = ["| target | subject | where | value | limit | met |", "|---|---|---|---:|---:|---|"]
    for t in targets:
        value = "—" if t["value"] is None else f"{t['value']:.3g}"
        met = {True: "yes", False: "**no**", None: "not measured"}[t["met"]]
        lines.append(
            f"| {t['target']} | {t['subject']} | {t['at']} | {value} | {t['limit']:g} | {met} |"
        )
    return "\n".join(lines)


def markdown(result: dict[str, Any]) -> str:
    """The whole report."""
    meta = result["meta"]
    load = " / ".join(str(x) for x in meta["load_average_start"])
    end = " / ".join(str(x) for x in meta["load_average_end"])
    parts = [
        "# Scale bench",
        f"`{meta['command']}`, started {meta['started']}, {meta['elapsed_s']:.0f} s, "
        f"{meta['cpus']} CPUs, load average {load} at the start and {end} at the end"
        + (f". {meta['note']}" if meta["note"] else "."),
        f"Expected time of the issue's run to 1M messages on these stores, from the load "
        f"rates of the biggest step: about {meta['expected_s_at_1m'] / 60:.0f} min.",
        *[f"**{name} failed:** {why}" for name, why in meta.get("failed", {}).items()],
        "## Per step",
        step_table(result["steps"]),
        "## Concurrency",
        concurrency_table(result["concurrency"]),
        "## Targets",
        target_table(result["targets"]),
    ]
    return "\n\n".join(parts) + "\n"
