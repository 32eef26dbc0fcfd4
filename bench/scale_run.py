"""Run the scale bench over the chosen stores and write its results (JSON, Markdown,
PNG plots). ``python -m bench --scale`` calls :func:`main`."""

from __future__ import annotations

import json
import logging
import os
import platform
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import uuid4

from . import concurrency, scale_targets
from .plots import write_plots
from .scale import DEFAULT, SMOKE, ScaleSizes, steps
from .scale_data import Plan, parse_count
from .scale_stores import KINDS, OPENERS, STORES

FULL_STEPS = "10k,100k,1m"
AGENTS = "1,8,32,128"
BIG = 1_000_000


def _load() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


async def run_store(
    kind: str,
    chosen: set[str],
    counts: list[int],
    agents: list[int],
    sizes: ScaleSizes,
    log: Any,
    **where: Any,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Grow a store of ``kind`` through ``counts``, measuring the ``chosen`` subjects over
    it, then run the concurrency levels on them; (steps, concurrency) keyed by subject."""
    tag = f"scale-{uuid4().hex[:6]}"
    plan = Plan(tag)
    levels: dict[str, list[dict[str, Any]]] = {}
    async with OPENERS[kind](tag, chosen, **where) as subjects:
        grown = await steps(subjects, plan, counts, sizes, log)
        for subject in subjects:
            if not subject.measured:
                continue
            found = levels.setdefault(subject.name, [])
            for n in agents:
                found.append(
                    await concurrency.in_process(
                        subject, plan, n, sizes.total_turns, sizes.min_turns
                    )
                )
                log(f"{subject.name:14} {n:>4} agents  {found[-1]['turns_per_s']:.1f} turns/s")
            url = getattr(subject, "url", None)  # the peer has none
            if url:
                label = f"{subject.name} ({sizes.processes} processes)"
                levels[label] = [
                    concurrency.in_processes(
                        url,
                        subject.tenant_prefix,
                        plan,
                        n,
                        sizes.processes,
                        sizes.total_turns,
                        sizes.min_turns,
                    )
                    for n in agents
                ]
    return grown, levels


def expected_seconds(steps_by: dict[str, list[dict[str, Any]]], target: int = BIG) -> float:
    """How long growing every subject to ``target`` messages and measuring it would take,
    from the load rate at each subject's biggest step (the loads dominate)."""
    total = 0.0
    for entries in steps_by.values():
        last = entries[-1]
        if last["load_msgs_per_s"]:
            total += target / last["load_msgs_per_s"] + 3 * last["measure_s"]
    return total


async def run(
    stores: list[str],
    counts: list[int],
    agents: list[int],
    sizes: ScaleSizes = DEFAULT,
    log: Any = print,
    command: str = "python -m bench --scale",
    note: str = "",
    **where: Any,
) -> dict[str, Any]:
    """The whole result (see :func:`write`)."""
    started, load_start, clock = datetime.now(UTC), _load(), time.perf_counter()
    steps_by: dict[str, list[dict[str, Any]]] = {}
    levels: dict[str, list[dict[str, Any]]] = {}
    seconds: dict[str, float] = {}
    failed: dict[str, str] = {}
    for name, subjects in KINDS.items():
        chosen = set(subjects) & set(stores)
        if not chosen:
            continue
        begin = time.perf_counter()
        try:
            grown, found = await run_store(name, chosen, counts, agents, sizes, log, **where)
        except Exception as exc:  # one store's failure must not lose the others' figures
            failed[name] = f"{type(exc).__name__}: {exc}"[:500]
            log(f"{name}: FAILED {failed[name]}")
            continue
        seconds[name] = round(time.perf_counter() - begin, 1)
        log(f"{name}: {seconds[name]} s")
        steps_by.update(grown)
        levels.update(found)
    return {
        "meta": {
            "command": command,
            "note": note,
            "started": started.isoformat(timespec="seconds"),
            "elapsed_s": round(time.perf_counter() - clock, 1),
            "store_s": seconds,
            "failed": failed,
            "load_average_start": load_start,
            "load_average_end": _load(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "stores": stores,
            "steps": counts,
            "agents": agents,
            "sizes": sizes.__dict__,
            "expected_s_at_1m": round(expected_seconds(steps_by)),
        },
        "steps": steps_by,
        "concurrency": levels,
        "targets": decide(steps_by, levels),
    }


def decide(steps_by: dict[str, Any], levels: dict[str, Any]) -> list[dict[str, Any]]:
    """Every target of the issue, decided from these figures."""
    return (
        scale_targets.growth_targets(steps_by)
        + scale_targets.concurrency_targets(levels)
        + scale_targets.peer_targets(steps_by, levels)
        + scale_targets.embedded_floor_targets()
    )


def merge(paths: list[Path]) -> dict[str, Any]:
    """One result of several runs' JSON (stores run as separate processes, e.g. at the
    same time): their figures side by side, the targets decided again, each run's
    conditions kept under ``meta.runs``."""
    runs = [json.loads(path.read_text(encoding="utf-8")) for path in paths]
    steps_by = {k: v for run in runs for k, v in run["steps"].items()}
    levels = {k: v for run in runs for k, v in run["concurrency"].items()}
    meta = dict(runs[0]["meta"])
    done = {k for run in runs for k in run["meta"].get("store_s", {})}
    meta.update(
        command=" + ".join(run["meta"]["command"] for run in runs),
        elapsed_s=max(run["meta"]["elapsed_s"] for run in runs),
        load_average_end=runs[-1]["meta"]["load_average_end"],
        stores=[s for run in runs for s in run["meta"]["stores"]],
        store_s={k: v for run in runs for k, v in run["meta"].get("store_s", {}).items()},
        failed={  # a store that failed in one run and ran in another is not failed
            k: v for run in runs for k, v in run["meta"].get("failed", {}).items() if k not in done
        },
        expected_s_at_1m=round(expected_seconds(steps_by)),
        runs=[run["meta"] for run in runs],
    )
    return {
        "meta": meta,
        "steps": steps_by,
        "concurrency": levels,
        "targets": decide(steps_by, levels),
    }


def write(result: dict[str, Any], folder: Path, name: str, plots: Path | None = None) -> list[Path]:
    """``<name>.json``, ``<name>.md`` in ``folder`` and the plots in ``plots`` (default:
    ``folder``); every path written."""
    from .scale_report import markdown

    folder.mkdir(parents=True, exist_ok=True)
    data, text = folder / f"{name}.json", folder / f"{name}.md"
    data.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    text.write_text(markdown(result), encoding="utf-8")
    prefix = "" if name == "scale" else f"{name}-"
    return [data, text, *write_plots(result, plots or folder, prefix)]


def main(args: Any, log: Any = print) -> int:
    """Run with the parsed ``python -m bench`` arguments."""
    import asyncio
    import sys

    chosen = [s.strip() for s in args.only.split(",") if s.strip()]
    chosen = [n for s in chosen for n in (("nams-embedded", "nams-bolt") if s == "nams" else (s,))]
    unknown = set(chosen) - set(STORES)
    if unknown:
        raise SystemExit(f"unknown stores: {', '.join(sorted(unknown))} (of {', '.join(STORES)})")
    counts = sorted(parse_count(s) for s in (args.steps or FULL_STEPS).split(","))
    agents = sorted(int(a) for a in args.agents.split(","))
    name = args.name if args.name != "latest" else "scale"
    if args.merge:
        result = merge([Path(p) for p in args.merge.split(",")])
        for path in write(result, args.out, name, args.plots):
            log(f"wrote {path}")
        return 0
    sizes = SMOKE if args.smoke else DEFAULT
    # the turn protocol logs what NAMS cannot record once per backend object: 100 here
    logging.getLogger("memory_core.turns").setLevel(logging.ERROR)
    command = "python -m bench " + " ".join(sys.argv[1:])
    result = asyncio.run(run(chosen, counts, agents, sizes, log, command.strip(), args.note))
    for path in write(result, args.out, name, args.plots):
        log(f"wrote {path}")
    return 0
