"""Load test of the NAMS-compatible server: many concurrent clients, latency figures.

Starts ``--servers`` server processes (``memory-core serve``) on loopback ports over one
store, then runs ``--clients`` concurrent clients from this (separate) process, each with
its own connection, spread over the servers. Every client creates a conversation and
makes ``--requests`` requests in a fixed cycle (append a message, read the newest
messages, search, read the header). At the end each client's conversation is read back
to check that it holds exactly the messages acknowledged to it (none lost or
duplicated). Prints request count, errors, throughput and
latency percentiles (p50/p90/p99/max, overall and per operation) and the CPU seconds
each process (clients, servers, the local Neo4j) used; ``--json`` prints them
as one JSON object. Bounded: stops after ``--max-seconds`` whatever remains. Exits 1 when
a message acknowledged to a client is missing, one is duplicated, a request got a 500, or
a client did not finish in time; overload answers (503 from a saturated store, client
timeouts) are reported as figures, not failures.

The servers keep an idle connection ``--keep-alive`` seconds (30; the server's default is
5): on a loaded 2-core machine the client process can take over 5 s to get to a response
and send its next request, and a server closing that connection as idle meanwhile fails
the request (``RemoteProtocolError``, ``ReadError``; seen in CI), which is the client's
starvation, not the server's load.

Several ``--servers`` counts (``--servers 1 2 3``) run one after another, each on a fresh
store (PostgreSQL: a schema of its own in the same database), and print one report each
(one JSON line each with ``--json``).

Examples (from the repository root)::

    python scripts/server_load.py                                  # SQLite file, 1 server
    python scripts/server_load.py --backend bolt --servers 4       # Neo4j, 4 server processes
    python scripts/server_load.py --backend postgres --servers 1 2 3  # PostgreSQL, 1, 2, 3

``--backend bolt`` uses ``NEO4J_URI`` (and ``NEO4J_USERNAME``/``NEO4J_PASSWORD``) when set,
else starts the test suite's local Neo4j (``memory_core_dev.neo4j_server``).
``--backend postgres`` uses ``PG_TEST_URL`` when set, else starts a PostgreSQL the way the
test suite does (``memory_core_dev.postgres_server``); its CPU is summed over the server's
processes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
from _server_start import start_serve

KEY = "load-test-key"
ROOT = Path(__file__).resolve().parents[1]
CYCLE = ("append", "read", "search", "header")


def start_server(
    backend_url: str, env: dict[str, str], log: Any = subprocess.DEVNULL
) -> tuple[subprocess.Popen[bytes], str]:
    """One ``memory-core serve`` process; returns it and its base URL once it answers."""
    process, root = start_serve(
        backend_url, key=KEY, env=env, cwd=ROOT, log_level="warning", stderr=log
    )
    return process, root + "/v1"


class Recorder:
    """Latencies (ms) per operation, errors by kind."""

    def __init__(self) -> None:
        self.latencies: dict[str, list[float]] = defaultdict(list)
        self.errors: Counter[str] = Counter()

    async def timed(self, op: str, request: Any) -> httpx.Response | None:
        started = time.perf_counter()
        try:
            response: httpx.Response = await request
        except httpx.HTTPError as exc:
            self.errors[f"{op}:{type(exc).__name__}"] += 1
            return None
        self.latencies[op].append((time.perf_counter() - started) * 1000)
        if response.status_code >= 400:
            self.errors[f"{op}:{response.status_code}"] += 1
        return response


async def client(
    number: int,
    base_url: str,
    requests: int,
    recorder: Recorder,
    appended: dict[int, int],
    unanswered: Counter[int],
) -> str | None:
    headers = {"Authorization": f"Bearer {KEY}", "X-Workspace-Id": f"load-{number % 10}"}
    async with httpx.AsyncClient(
        base_url=base_url, headers=headers, trust_env=False, timeout=60
    ) as http:
        created = await recorder.timed("create", http.post("/conversations", json={}))
        if created is None or created.status_code != 201:
            return None
        cid = str(created.json()["id"])
        appended[number] = 0
        for i in range(requests):
            op = CYCLE[i % len(CYCLE)]
            if op == "append":
                body = {"role": "user", "content": f"client {number} message {i} about load"}
                response = await recorder.timed(
                    op, http.post(f"/conversations/{cid}/messages", json=body)
                )
                if response is not None and response.status_code == 201:
                    appended[number] += 1
                elif response is None or response.status_code >= 500:
                    unanswered[number] += 1  # may or may not have been stored
            elif op == "read":
                await recorder.timed(
                    op, http.get(f"/conversations/{cid}/messages", params={"limit": 20})
                )
            elif op == "search":
                await recorder.timed(
                    op, http.post(f"/conversations/{cid}/search", json={"query": "load"})
                )
            else:
                await recorder.timed(op, http.get(f"/conversations/{cid}"))
        return cid


def percentiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    ordered = sorted(values)

    def at(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 1)

    return {
        "n": len(ordered),
        "p50": at(0.50),
        "p90": at(0.90),
        "p99": at(0.99),
        "max": round(ordered[-1], 1),
        "mean": round(statistics.fmean(ordered), 1),
    }


async def run_load(
    base_urls: list[str], clients: int, requests: int, max_seconds: float
) -> dict[str, Any]:
    recorder = Recorder()
    appended: dict[int, int] = {}
    unanswered: Counter[int] = Counter()
    started = time.perf_counter()
    tasks = [
        asyncio.create_task(
            client(n, base_urls[n % len(base_urls)], requests, recorder, appended, unanswered)
        )
        for n in range(clients)
    ]
    done, pending = await asyncio.wait(tasks, timeout=max_seconds)
    for task in pending:
        task.cancel()
    elapsed = time.perf_counter() - started
    conversations = {
        n: task.result()
        for n, task in enumerate(tasks)
        if task in done and task.exception() is None and task.result() is not None
    }
    # A conversation holds every message acknowledged to its client, plus at most the
    # appends that got no answer (a timeout or 5xx may come after the write).
    stored = await _stored_counts(base_urls, conversations)
    lost = sum(1 for n, count in stored.items() if count < appended.get(n, 0))
    extra = sum(1 for n, count in stored.items() if count > appended.get(n, 0) + unanswered[n])
    unacknowledged = sum(max(0, count - appended.get(n, 0)) for n, count in stored.items())
    total = sum(len(v) for v in recorder.latencies.values())
    everything = [x for v in recorder.latencies.values() for x in v]
    return {
        "servers": len(base_urls),
        "clients": clients,
        "requests_per_client": requests,
        "completed_clients": len(conversations),
        "unfinished_clients": len(pending),
        "requests": total,
        "errors": dict(recorder.errors),
        "seconds": round(elapsed, 2),
        "throughput_rps": round(total / elapsed, 1) if elapsed else 0.0,
        "latency_ms": percentiles(everything),
        "by_operation": {op: percentiles(v) for op, v in sorted(recorder.latencies.items())},
        "conversations_losing_messages": lost,
        "conversations_with_duplicates": extra,
        "stored_without_acknowledgement": unacknowledged,
    }


async def _stored_counts(base_urls: list[str], conversations: dict[int, str]) -> dict[int, int]:
    """Each client's conversation read back (through the last server: with several
    servers, not the one most clients wrote through)."""
    counts: dict[int, int] = {}
    for number, cid in conversations.items():
        headers = {"Authorization": f"Bearer {KEY}", "X-Workspace-Id": f"load-{number % 10}"}
        async with httpx.AsyncClient(
            base_url=base_urls[-1], headers=headers, trust_env=False, timeout=60
        ) as http:
            response = await http.get(f"/conversations/{cid}/messages", params={"limit": 200})
            counts[number] = len(response.json()["messages"])
    return counts


def cpu_seconds(pid: int) -> float | None:
    """CPU time (user + system) a process has used so far; ``None`` off Linux."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def postgres_cpu_seconds(postmaster: int) -> float | None:
    """CPU seconds of a PostgreSQL server: the postmaster and its children (each connection
    is a process of its own, in a session of its own: counted by parent, not group)."""
    total = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(entry.name) == postmaster or int(fields[1]) == postmaster:
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total if total else None


def fresh_store(url: str, run: int) -> str:
    """The store of one run: a schema of its own for PostgreSQL, else ``url`` itself."""
    if not url.startswith(("postgresql://", "postgres://")):
        return url
    separator = "&" if "?" in url else "?"
    return f"{url}{separator}schema=load_{os.getpid()}_{run}"


def backend_url(
    args: argparse.Namespace, stack: ExitStack, env: dict[str, str], pids: dict[str, int]
) -> str:
    if args.backend_url:
        return str(args.backend_url)
    if args.backend == "embedded":
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="load-")))
        return f"sqlite:///{folder / 'load.db'}"
    if args.backend == "postgres":
        if os.environ.get("PG_TEST_URL"):
            return os.environ["PG_TEST_URL"]
        sys.path.insert(0, str(ROOT))
        from memory_core_dev.postgres_server import PostgresServer

        postgres = PostgresServer().start()
        stack.callback(postgres.close)
        if postgres.pid is not None:
            pids["postgres"] = postgres.pid
        return postgres.url
    if os.environ.get("NEO4J_URI"):
        return os.environ["NEO4J_URI"]
    sys.path.insert(0, str(ROOT))
    from memory_core_dev.neo4j_server import Neo4jServer

    server = Neo4jServer()
    server.start()
    stack.callback(server.close)
    if server.pid is not None:
        pids["neo4j"] = server.pid
    return str(server.uri)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=["embedded", "bolt", "postgres"], default="embedded")
    parser.add_argument("--backend-url", help="serve this store instead")
    parser.add_argument(
        "--servers",
        type=int,
        nargs="+",
        default=[1],
        help="server processes (1); several: a run each",
    )
    parser.add_argument("--clients", type=int, default=200, help="concurrent clients (200)")
    parser.add_argument("--requests", type=int, default=20, help="requests per client (20)")
    parser.add_argument("--max-seconds", type=float, default=300, help="time bound (300)")
    parser.add_argument(
        "--keep-alive", type=float, default=30, help="servers' keep-alive timeout, s (30)"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--server-log", type=Path, help="append the servers' warnings here")
    args = parser.parse_args(argv)
    env = {**os.environ, "NAMS_SERVER_KEEP_ALIVE_TIMEOUT": str(args.keep_alive)}
    failed = False
    with ExitStack() as stack:
        pids = {"clients": os.getpid()}
        url = backend_url(args, stack, env, pids)
        log = stack.enter_context(args.server_log.open("ab")) if args.server_log else None
        for run, servers in enumerate(args.servers):
            report = one_run(args, fresh_store(url, run), servers, env, dict(pids), log)
            if args.json:
                print(json.dumps(report), flush=True)
            else:
                _print(report)
            server_errors = [k for k in report["errors"] if k.endswith(":500")]
            lost = report["conversations_losing_messages"]
            failed |= bool(lost or report["conversations_with_duplicates"] or server_errors)
            failed |= bool(report["unfinished_clients"])
    return 1 if failed else 0


def one_run(
    args: argparse.Namespace,
    url: str,
    servers: int,
    env: dict[str, str],
    pids: dict[str, int],
    log: Any,
) -> dict[str, Any]:
    """``servers`` server processes over ``url`` and the clients' load; the report."""
    processes = []
    bases = []
    try:
        for n in range(servers):
            process, base = start_server(url, env, log or subprocess.DEVNULL)
            processes.append(process)
            bases.append(base)
            pids[f"server {n + 1}"] = process.pid
        before = {name: _cpu(name, pid) for name, pid in pids.items()}
        report = asyncio.run(run_load(bases, args.clients, args.requests, args.max_seconds))
        report["cpu_seconds"] = {
            name: round(now - start, 1)
            for name, pid in pids.items()
            if (start := before.get(name)) is not None and (now := _cpu(name, pid)) is not None
        }
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
    report["backend"] = args.backend if not args.backend_url else "given"
    return report


def _cpu(name: str, pid: int) -> float | None:
    return postgres_cpu_seconds(pid) if name == "postgres" else cpu_seconds(pid)


def _print(report: dict[str, Any]) -> None:
    lat = report["latency_ms"]
    print(
        f"{report['backend']}: {report['servers']} server(s), {report['clients']} clients x "
        f"{report['requests_per_client']} requests: {report['requests']} requests in "
        f"{report['seconds']} s ({report['throughput_rps']} req/s), "
        f"errors {report['errors'] or 0}, unfinished clients {report['unfinished_clients']}, "
        f"lost {report['conversations_losing_messages']}, duplicated "
        f"{report['conversations_with_duplicates']}, stored without an answer "
        f"{report['stored_without_acknowledgement']}"
    )
    print(f"  all       p50 {lat.get('p50')} ms  p99 {lat.get('p99')} ms  max {lat.get('max')} ms")
    for op, figures in report["by_operation"].items():
        print(f"  {op:<9} p50 {figures['p50']} ms  p99 {figures['p99']} ms  n={figures['n']}")
    cpu = ", ".join(f"{name} {spent} s" for name, spent in report.get("cpu_seconds", {}).items())
    print(f"  CPU used during the run ({os.cpu_count()} cores): {cpu}")


if __name__ == "__main__":
    raise SystemExit(main())
