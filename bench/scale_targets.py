"""The issue's targets, decided from a scale run's figures (each: the figure, the limit,
met or not). Growth targets compare the last step with the first one the run made (at
the issue's sizes: 1M against 10k)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

PEER = "peer"
LATEST = Path(__file__).resolve().parent / "results" / "latest.json"


def _get(entry: dict[str, Any], key: str, field: str) -> float | None:
    value = entry.get(key)
    return value.get(field) if isinstance(value, dict) else None


def _target(
    name: str, subject: str, value: float | None, limit: float, at_most: bool, where: str
) -> dict[str, Any]:
    """One decided target: ``value`` against ``limit`` (an upper bound when ``at_most``);
    ``met`` is ``None`` when it was not measured."""
    met = None if value is None else (value <= limit if at_most else value >= limit)
    return {
        "target": name,
        "subject": subject,
        "value": value,
        "limit": limit,
        "met": met,
        "at": where,
    }


def growth_targets(steps: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Latency and ingest at the last step against the first, deep list page against page 1."""
    found = []
    checks = (
        ("newest-100 p95 last/first step", "newest_100", "p95_ms", 1.2, True),
        ("search in one session p95 last/first step", "search_session", "p95_ms", 1.5, True),
        ("single-add msgs/s last/first step", "ingest_single", "msgs_per_s", 0.8, False),
        ("batch msgs/s last/first step", "ingest_batch", "msgs_per_s", 0.8, False),
    )
    for subject, entries in steps.items():
        if subject == PEER or not entries:
            continue
        first, last = entries[0], entries[-1]
        where = f"{last['messages']:,} vs {first['messages']:,} messages"
        for name, key, field, limit, at_most in checks:
            a, b = _get(last, key, field), _get(first, key, field)
            ratio = a / b if a is not None and b else None
            found.append(_target(name, subject, ratio, limit, at_most, where))
        deep = _get(last, "list_pages", "deep_to_page1_p95")
        page = _get(last, "list_pages", "deep_page")
        where = f"page {page:.0f} at {last['messages']:,} messages" if page else "not run"
        found.append(_target("list page 50 p95 / page 1 p95", subject, deep, 1.5, True, where))
    return found


def concurrency_targets(levels: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Bolt's throughput at 32 agents against 1, and no errors anywhere."""
    found = []
    bolt = {level["agents"]: level for level in levels.get("bolt", [])}
    if 1 in bolt and 32 in bolt:
        ratio = bolt[32]["turns_per_s"] / bolt[1]["turns_per_s"]
        found.append(_target("bolt turns/s at 32 agents / at 1", "bolt", ratio, 4.0, False, ""))
    for subject, entries in levels.items():
        errors = sum(level["errors"] for level in entries)
        found.append(_target("errors under concurrency", subject, float(errors), 0, True, ""))
    return found


def peer_targets(
    steps: dict[str, list[dict[str, Any]]], levels: dict[str, list[dict[str, Any]]]
) -> list[dict[str, Any]]:
    """Bolt against the peer at every size and concurrency the peer ran (ratio of
    memory-core's figure to the peer's: time ≤ 1, throughput ≥ 1)."""
    found = []
    shared = (
        ("ingest_single", "msgs_per_s", False),
        ("ingest_batch", "msgs_per_s", False),
        ("newest_100", "p95_ms", True),
        ("list_pages", "deep_p95_ms", True),
    )
    for ours, theirs in zip(steps.get("bolt", []), steps.get(PEER, []), strict=False):
        where = f"{ours['messages']:,} messages"
        for key, field, at_most in shared:
            a, b = _get(ours, key, field), _get(theirs, key, field)
            value = a / b if a is not None and b else None
            found.append(_target(f"vs peer: {key} {field}", "bolt", value, 1.0, at_most, where))
    peer_levels = {level["agents"]: level for level in levels.get(PEER, [])}
    for level in levels.get("bolt", []):
        other = peer_levels.get(level["agents"])
        if other and other["turns_per_s"]:
            value = level["turns_per_s"] / other["turns_per_s"]
            where = f"{level['agents']} agents"
            found.append(_target("vs peer: turns/s", "bolt", value, 1.0, False, where))
    return found


def embedded_floor_targets(latest: Path = LATEST) -> list[dict[str, Any]]:
    """The two embedded floor targets, from the last ``python -m bench`` run (the scale
    run has no floor): single add ≤ 1.8 times a raw INSERT, newest-100 ≤ 2.5 times a raw fetch."""
    if not latest.exists():
        return []
    data = json.loads(latest.read_text(encoding="utf-8"))
    found = []
    for workload, metric, limit in (
        ("single add_message", "p50_ms", 1.8),
        ("newest-100 read", "median_ms", 2.5),
    ):
        for row in data.get("workloads", []):
            if row["backend"] == "embedded" and row["workload"] == workload:
                ratio = row["ratios"].get("vs_floor", {}).get(metric, {}).get("median")
                where = f"{latest.name} ({data['meta'].get('started', '?')}), size {row['size']}"
                found.append(
                    _target(f"embedded {workload} / floor", "embedded", ratio, limit, True, where)
                )
    return found
