"""Figures for the hostile-input defences of issue 25 (items 3, 4, 5): forged listing
cursors, idle and slow connections, many mentions. Prints figures; asserts nothing.

* ``cursors``: a workspace of ``--conversations`` conversations (SQLite file) served by a
  ``memory-core serve`` process; the time of page 1 and of pages after forged cursors
  (positions before everything, in the middle, after everything), the answer to a
  deeply nested cursor and to an offset cursor of the old server, another workspace's
  listing while ``--attackers`` forged requests run, and the server's RSS.
* ``connections``: ``--idle`` connections that send nothing to a server process, how
  many are still open after ``--wait`` seconds, and the time of a normal request while
  they are held.
* ``mentions``: ``add_message`` with ``--mentions`` typed mentions on a SQLite file,
  and how long a one-message write started meanwhile waited (the limit is raised to
  ``--mentions`` where there is one, to time the de-duplication itself).

``--tree PATH`` runs the server and the store code of another checkout (for figures
before a change: ``git archive HEAD | tar -x -C /tmp/old``, then ``--tree /tmp/old``).

    python scripts/server_hostile.py cursors
    python scripts/server_hostile.py connections --idle 5000
    python scripts/server_hostile.py mentions --mentions 8000
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from _server_start import start_serve

KEY = "hostile-key"
ROOT = Path(__file__).resolve().parents[1]


def serve(tree: Path, backend_url: str) -> tuple[subprocess.Popen[bytes], str]:
    """A ``memory-core serve`` process of ``tree``; returns it and its root URL."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return start_serve(backend_url, key=KEY, env=env, cwd=tree, log_level="error")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def headers(workspace: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {KEY}", "X-Workspace-Id": workspace}


# ---------------------------------------------------------------------- cursors


def fill(tree: Path, path: Path, workspace: str, count: int) -> None:
    """``count`` conversations of ``workspace`` written straight into the store."""
    code = f"""
import asyncio
from memory_core import open_backend
from memory_core.server.hosted import HostedMemory
async def main():
    async with open_backend("sqlite:///{path}", multi_tenant=True) as backend:
        hosted = HostedMemory(backend)
        for i in range({count}):
            await hosted.create_conversation({workspace!r}, None, {{"i": i}})
asyncio.run(main())
"""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    subprocess.run([sys.executable, "-c", code], env=env, cwd=tree, check=True)


def timed(http: httpx.Client, url: str, **params: Any) -> tuple[float, httpx.Response]:
    started = time.perf_counter()
    response = http.get(url, params=params)
    return (time.perf_counter() - started) * 1000, response


def median_ms(http: httpx.Client, url: str, runs: int = 5, **params: Any) -> tuple[float, int]:
    times, status = [], 0
    for _ in range(runs):
        ms, response = timed(http, url, **params)
        times.append(ms)
        status = response.status_code
    return statistics.median(times), status


def forged(micros: int, conversation_id: str = "ffffffff-ffff-5fff-bfff-ffffffffffff") -> str:
    backing = "embedded." + b64(json.dumps([micros, conversation_id]).encode())
    return "nams-server." + b64(json.dumps(backing).encode())


async def attack(url: str, workspace: str, params: dict[str, Any], count: int) -> None:
    async with httpx.AsyncClient(trust_env=False, timeout=120) as http:
        await asyncio.gather(
            *(http.get(url, params=params, headers=headers(workspace)) for _ in range(count))
        )


def cursors(args: argparse.Namespace) -> None:
    tree = Path(args.tree).resolve()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "store.db"
        started, first = time.perf_counter(), int(time.time() * 1_000_000)
        fill(tree, path, "big", args.conversations)
        middle = (first + int(time.time() * 1_000_000)) // 2
        fill(tree, path, "small", 10)
        print(f"filled {args.conversations} conversations in {time.perf_counter() - started:.1f} s")
        process, root = serve(tree, f"sqlite:///{path}")
        url = root + "/v1/conversations"
        try:
            print(f"server RSS at start: {rss_mb(process.pid):.0f} MB")
            with httpx.Client(trust_env=False, timeout=120, headers=headers("big")) as http:
                ms, status = median_ms(http, url, limit=50)
                print(f"page 1 (limit 50): {ms:.1f} ms ({status})")
                for name, micros in (("before all", 0), ("middle", middle), ("after all", 2**62)):
                    ms, status = median_ms(http, url, limit=50, cursor=forged(micros))
                    print(f"forged cursor {name}: {ms:.1f} ms ({status})")
                deep = "nams-server." + b64(b"[" * 3000 + b"]" * 3000)
                ms, response = timed(http, url, cursor=deep)
                print(f"3,000-deep cursor: {response.status_code} in {ms:.1f} ms")
                offset = b64(json.dumps({"t": 0, "i": "x", "o": 10**9}).encode())
                for shape in (offset, "nams-server." + offset):
                    ms, response = timed(http, url, cursor=shape)
                    print(f"offset cursor {shape[:16]}…: {response.status_code} in {ms:.1f} ms")
                ms, status = median_ms(http, url, runs=3, limit=50, userId="nobody")
                print(f"userId matching none of {args.conversations}: {ms:.1f} ms ({status})")
            with httpx.Client(trust_env=False, timeout=120, headers=headers("small")) as http:
                quiet, _ = median_ms(http, url, limit=50)
                print(f"other workspace's listing, quiet: {quiet:.1f} ms")

                def during() -> float:
                    return median_ms(http, url, runs=3, limit=50)[0]

                async def both(params: dict[str, Any]) -> float:
                    task = asyncio.create_task(attack(url, "big", params, args.attackers))
                    await asyncio.sleep(0.05)
                    loaded = await asyncio.to_thread(during)
                    await task
                    return loaded

                for name, params in (
                    ("forged cursors", {"cursor": forged(2**62), "limit": 200}),
                    ("userId=nobody listings", {"userId": "nobody", "limit": 200}),
                ):
                    loaded = asyncio.run(both(params))
                    print(
                        f"  during {args.attackers} {name}: {loaded:.1f} ms; "
                        f"server RSS after: {rss_mb(process.pid):.0f} MB"
                    )
        finally:
            process.terminate()
            process.wait(30)


# ---------------------------------------------------------------------- connections


def still_open(sock: socket.socket) -> bool:
    """False once the server closed ``sock`` (what it sent first, a 503, is read)."""
    sock.setblocking(False)  # with a timeout set, recv would first wait that long
    try:
        while sock.recv(65536):
            pass
        return False  # end of stream
    except BlockingIOError:
        return True
    except OSError:
        return False


def connections(args: argparse.Namespace) -> None:
    tree = Path(args.tree).resolve()
    process, root = serve(tree, "memory://")
    held: list[socket.socket] = []
    try:
        host, port = "127.0.0.1", int(root.rsplit(":", 1)[1])
        for _ in range(args.idle):
            try:
                held.append(socket.create_connection((host, port), timeout=5))
            except OSError as exc:
                print(f"connection {len(held) + 1} failed: {exc}")
                break
        print(f"opened {len(held)} idle connections; server RSS {rss_mb(process.pid):.0f} MB")
        started = time.perf_counter()
        try:
            response = httpx.get(root + "/openapi.json", trust_env=False, timeout=30)
            answer = str(response.status_code)
        except httpx.HTTPError as exc:
            answer = type(exc).__name__
        print(f"a normal request meanwhile: {answer} in {(time.perf_counter() - started):.2f} s")
        time.sleep(args.wait)
        count = sum(still_open(sock) for sock in held)
        print(f"after {args.wait:g} s: {count} of {len(held)} still open")
    finally:
        for sock in held:
            sock.close()
        process.terminate()
        process.wait(30)


# ---------------------------------------------------------------------- mentions


def mentions(args: argparse.Namespace) -> None:
    tree = Path(args.tree).resolve()
    code = f"""
import asyncio, tempfile, time
from memory_core import Limits, open_backend
async def main():
    try:
        options = {{"limits": Limits(max_mentions={args.mentions})}}
    except TypeError:
        options = {{}}
    folder = tempfile.mkdtemp()
    async with open_backend(f"sqlite:///{{folder}}/store.db", **options) as backend:
        await backend.add_message(session_id="warm", role="user", content="warm")
        refs = [{{"name": f"entity {{i}}", "type": "PERSON"}} for i in range({args.mentions})]
        async def other():
            await asyncio.sleep(0.05)
            started = time.perf_counter()
            await backend.add_message(session_id="other", role="user", content="x")
            return time.perf_counter() - started
        started = time.perf_counter()
        waiting = asyncio.create_task(other())
        stored = await backend.add_message(
            session_id="s", role="user", content="hi",
            extraction_mode="explicit", explicit_mentions=refs,
        )
        took = time.perf_counter() - started
        print(f"{{len(refs)}} mentions ({{len(stored.mentions)}} distinct) stored in "
              f"{{took:.2f}} s; a one-message write meanwhile waited {{await waiting:.2f}} s")
asyncio.run(main())
"""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    subprocess.run([sys.executable, "-c", code], env=env, cwd=tree, check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workload", choices=["cursors", "connections", "mentions"])
    parser.add_argument("--tree", default=str(ROOT), help="source tree to run (this one)")
    parser.add_argument("--conversations", type=int, default=20_000)
    parser.add_argument("--attackers", type=int, default=20)
    parser.add_argument("--idle", type=int, default=2_000)
    parser.add_argument("--wait", type=float, default=15.0)
    parser.add_argument("--mentions", type=int, default=8_000)
    args = parser.parse_args()
    {"cursors": cursors, "connections": connections, "mentions": mentions}[args.workload](args)


if __name__ == "__main__":
    main()
