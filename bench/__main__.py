"""``python -m bench``: every workload on embedded, Bolt, NAMS and PostgreSQL, side by side
with the peers and the floor; writes ``bench/results/latest.json`` and ``latest.md``.

    python -m bench            # default sizes (minutes on a shared 2-core machine)
    python -m bench --full     # the full sizes (1k singles, 100k reads, 5,000 convs)
    python -m bench --quick    # small sizes, the usual repeats: a first look in seconds
    python -m bench --smoke    # tiny sizes: checks the harness works (CI runs this)
    python -m bench --only embedded,nams
    python -m bench --only embedded,bolt,nams --workloads keyset   # one kind of workload
    python -m bench --only postgres --name postgres   # bench/results/postgres.json and .md
    python -m bench --full --only embedded,postgres,bolt --workloads long_term --name long-term
    python -m bench --full --only embedded,postgres,bolt --workloads reasoning --name reasoning
    python -m bench --scale --steps 10k,100k --plots docs/assets   # bench/results/scale.*

Bolt uses ``NEO4J_URI`` when set (no auth unless ``NEO4J_USERNAME``/``NEO4J_PASSWORD``),
else starts the test-suite's local Neo4j; PostgreSQL uses ``PG_TEST_URL`` when set, else
starts a throwaway server (both: a database of the bench's own, dropped at the end). Run
from the repository root.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import os
import platform
import resource
import sqlite3
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from . import sizes as sizes_module
from .core import EVERY, Selection

BACKENDS = ("embedded", "bolt", "nams", "postgres")
RESULTS = Path(__file__).resolve().parent / "results"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--smoke", action="store_true", help="tiny sizes (CI)")
    mode.add_argument("--full", action="store_true", help="the issue's sizes")
    mode.add_argument("--quick", action="store_true", help="small sizes, the usual repeats")
    parser.add_argument("--scale", action="store_true", help="growth and concurrency (scale.py)")
    parser.add_argument("--steps", default="", help="--scale: store sizes (default 10k,100k,1m)")
    parser.add_argument("--agents", default="1,8,32,128", help="--scale: concurrent agents")
    parser.add_argument("--plots", type=Path, default=None, help="--scale: folder of the PNGs")
    parser.add_argument("--merge", default="", help="--scale: merge these runs' JSON files")
    parser.add_argument("--only", default=",".join(BACKENDS), help="backends to run")
    parser.add_argument(
        "--workloads",
        default="",
        help=f"workloads to run, of {','.join(Selection.KEYS)} (default: every one)",
    )
    parser.add_argument("--repeats", type=int, default=None, help="repeats per workload (>= 5)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="folder for the results")
    parser.add_argument("--name", default="latest", help="results file name, without suffix")
    parser.add_argument("--note", default="", help="a line for the report (e.g. the load)")
    parser.add_argument(
        "--keep",
        type=Path,
        default=None,
        help="an earlier latest.json whose other backends' results are kept in the report",
    )
    args = parser.parse_args(argv)
    if args.scale:  # --smoke: tiny samples
        from .scale_run import main as scale_main

        return scale_main(args, _log)
    chosen = [b.strip() for b in args.only.split(",") if b.strip()]
    unknown = set(chosen) - set(BACKENDS)
    if unknown:
        parser.error(f"unknown backends: {', '.join(sorted(unknown))}")
    try:
        want = Selection(tuple(w.strip() for w in args.workloads.split(",") if w.strip()))
    except ValueError as exc:
        parser.error(str(exc))
    name = "smoke" if args.smoke else "full" if args.full else "quick" if args.quick else "default"
    sizes = {
        "smoke": sizes_module.SMOKE,
        "full": sizes_module.FULL,
        "quick": sizes_module.QUICK,
    }.get(name, sizes_module.DEFAULT)
    if args.repeats is not None:
        from dataclasses import replace

        sizes = replace(sizes, repeats=args.repeats)
    command = "python -m bench " + " ".join(argv if argv is not None else sys.argv[1:])
    result = asyncio.run(run(sizes, name, chosen, command.strip(), args.note, want=want))
    from .report import keep, write

    if args.keep is not None:
        result = keep(result, args.keep)
    json_path, md_path = write(result, args.out, args.name)
    print(f"wrote {json_path} and {md_path}")
    return 0


async def run(
    sizes: sizes_module.Sizes,
    mode: str,
    backends: list[str],
    command: str = "python -m bench",
    note: str = "",
    neo4j_uri: str | None = None,
    want: Selection = EVERY,
    postgres_url: str | None = None,
) -> dict[str, Any]:
    """Run the chosen backends' workloads (those ``want`` selects); the whole result (see
    ``report.write``)."""
    started = datetime.now(UTC)
    load_start = _load()
    workloads: list[dict[str, Any]] = []
    rss: dict[str, float] = {}
    neo4j_version = postgres_version = "not run"
    if "embedded" in backends:
        from . import embedded

        workloads += await embedded.run(sizes, _log, want)
    if "bolt" in backends:
        from . import bolt

        uri = neo4j_uri or os.environ.get("NEO4J_URI")
        server = None
        if not uri:
            from memory_core_dev.neo4j_server import Neo4jServer

            server = Neo4jServer().start()
            uri = server.uri
        try:
            neo4j_version = await _neo4j_version(uri)
            workloads += await bolt.run(uri, sizes, _log, want)
            if server is not None and server.pid is not None:
                rss["neo4j (JVM)"] = _peak_rss_of(server.pid)
        finally:
            if server is not None:
                server.close()
    if "nams" in backends:
        from . import nams

        workloads += await nams.run(sizes, _log, want)
    if "postgres" in backends:
        from . import postgres

        found, postgres_version = await postgres.run(sizes, _log, want, postgres_url)
        workloads += found
    rss["bench process (client)"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "meta": {
            "command": command,
            "mode": mode,
            "repeats": sizes.repeats,
            "sizes": sizes.__dict__,
            "started": started.isoformat(timespec="seconds"),
            "finished": datetime.now(UTC).isoformat(timespec="seconds"),
            "machine": _machine(),
            "load_start": load_start,
            "load_end": _load(),
            "note": note,
            "python": platform.python_version(),
            "sqlite_version": sqlite3.sqlite_version,
            "neo4j_version": neo4j_version,
            "driver": f"neo4j {_version('neo4j')}, Rust extension {_version('neo4j-rust-ext')}",
            "peer_version": _version("neo4j-agent-memory"),
            "postgres_version": postgres_version,
            "postgres_peers": _postgres_peers() if "postgres" in backends else {},
            "backends": backends,
            "workloads": list(want.names) or "all",
        },
        "workloads": workloads,
        "peak_rss_mb": rss,
        "skipped": [b for b in BACKENDS if b not in backends],
    }


def _postgres_peers() -> dict[str, str]:
    from .postgres import LANGCHAIN, LANGGRAPH

    return {
        LANGCHAIN: f"langchain-postgres {_version('langchain-postgres')} "
        "PostgresChatMessageHistory",
        LANGGRAPH: f"langgraph-checkpoint-postgres {_version('langgraph-checkpoint-postgres')} "
        "AsyncPostgresStore (no index)",
    }


def _log(line: str) -> None:
    print(line, flush=True)


def _load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def _machine() -> str:
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} logical CPUs, {platform.system()} {platform.release()}"


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _peak_rss_of(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


async def _neo4j_version(uri: str) -> str:
    import neo4j

    from .bolt import auth

    driver = neo4j.AsyncGraphDatabase.driver(uri, auth=auth())
    try:
        records, _, _ = await driver.execute_query(
            "CALL dbms.components() YIELD versions, edition RETURN versions[0] + ' ' + edition AS v"
        )
        return str(records[0]["v"])
    finally:
        await driver.close()
    return "unknown"  # pragma: no cover


if __name__ == "__main__":
    raise SystemExit(main())
