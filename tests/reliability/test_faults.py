"""Faults: a read-only or full SQLite file, and the NAMS server killed mid-request.

Each ends in a typed error and an intact store: SQLite's integrity check passes, and
what was acknowledged is stored exactly once while a failed batch left nothing behind.
The read-only file is made immutable (``chattr +i`` when running as root, who ignores
file modes); the full disk is a child process with a file-size limit (``RLIMIT_FSIZE``).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest

from memory_core import TransportError, open_backend

pytestmark = pytest.mark.anyio

CHILD = r"""
import json, resource, signal, sys, anyio
from memory_core import MemoryCoreError, open_backend

url, mode = sys.argv[1], sys.argv[2]
outcome = {}

async def main():
    async with open_backend(url, busy_timeout=2) as backend:
        try:
            outcome["read"] = len((await backend.get_conversation("s")).messages)
        except MemoryCoreError as exc:
            outcome["read_error"] = type(exc).__name__
        if mode == "full":
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            limit = int(sys.argv[3])
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        batch = [{"role": "user", "content": "z" * 4000} for _ in range(200)]
        try:
            await backend.add_messages_batch("s", batch, batch_size=10)
            outcome["write"] = "stored"
        except MemoryCoreError as exc:
            outcome["write_error"] = type(exc).__name__
        try:
            outcome["after"] = len((await backend.get_conversation("s")).messages)
        except MemoryCoreError as exc:
            outcome["after_error"] = type(exc).__name__

try:
    anyio.run(main)
except MemoryCoreError as exc:
    outcome["open_error"] = type(exc).__name__
print(json.dumps(outcome))
"""


async def _seed(path: Path, count: int) -> None:
    async with open_backend(f"sqlite:///{path}") as backend:
        await backend.add_messages_batch(
            "s", [{"role": "user", "content": f"m{i}"} for i in range(count)]
        )


def _child(path: Path, mode: str, *extra: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, f"sqlite:///{path}", mode, *extra],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _check_intact(path: Path, count: int) -> None:
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0] == count
    finally:
        conn.close()


class Freezable:
    """A folder whose files can be made unchangeable, even for root: ``chattr +i`` as
    root (root ignores file modes), plain modes otherwise."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.immutable = False

    def freeze(self) -> None:
        items = [*map(str, self.folder.iterdir()), str(self.folder)]
        if os.geteuid() == 0:
            subprocess.run(["chattr", "+i", *items], check=True)
            self.immutable = True
        else:
            for item in items:
                os.chmod(item, 0o555 if os.path.isdir(item) else 0o444)

    def thaw(self) -> None:
        items = [*map(str, self.folder.iterdir()), str(self.folder)]
        if self.immutable:
            subprocess.run(["chattr", "-i", *items], check=True)
            self.immutable = False
        for item in items:
            os.chmod(item, 0o755)


@pytest.fixture
def frozen(tmp_path: Path) -> Iterator[Freezable]:
    folder = tmp_path / "ro"
    folder.mkdir()
    freezable = Freezable(folder)
    try:
        yield freezable
    finally:
        freezable.thaw()


async def test_read_only_file_gives_typed_errors_and_stays_intact(frozen: Freezable) -> None:
    path = frozen.folder / "ro.db"
    await _seed(path, 5)
    frozen.freeze()
    errors: list[BaseException] = []
    backend = open_backend(f"sqlite:///{path}", busy_timeout=1)
    try:
        await backend.connect()
        await backend.add_message("s", "user", "refused")
    except Exception as exc:
        errors.append(exc)
    finally:
        await backend.close()
    frozen.thaw()
    assert errors and isinstance(errors[0], TransportError), errors
    _check_intact(path, 5)


async def test_full_disk_gives_a_typed_error_and_no_half_batch(tmp_path: Path) -> None:
    path = tmp_path / "full.db"
    await _seed(path, 5)
    # Room for a little more than what is there: the 800 KB batch cannot fit.
    limit = max(path.stat().st_size, 64 * 1024) + 200 * 1024
    outcome = _child(path, "full", str(limit))
    assert outcome.get("write_error") == "TransportError", outcome
    assert outcome.get("after") == 5, outcome
    _check_intact(path, 5)


# ---------------------------------------------------------------------- NAMS killed


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _serve(path: Path, port: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "NAMS_SERVER_API_KEYS": "fault-key"}
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "memory_core.cli",
            "serve",
            "--backend-url",
            f"sqlite:///{path}",
            "--port",
            str(port),
            "--test-admin",
            "--log-level",
            "warning",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=Path(__file__).resolve().parents[2],
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with httpx.Client(trust_env=False) as http:
                http.get(f"http://127.0.0.1:{port}/openapi.json", timeout=1)
            return process
        except httpx.HTTPError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("the server did not start")


async def test_nams_server_killed_mid_request(tmp_path: Path) -> None:
    """The server stores the message, then dies before answering: the caller gets a
    TransportError (a POST is never retried), and after a restart the message is there
    exactly once and the store is intact."""
    path = tmp_path / "served.db"
    port = _free_port()
    url = f"nams+http://127.0.0.1:{port}/v1"
    options = {"api_key": "fault-key", "trust_env": False, "max_retries": 0}
    server = _serve(path, port)
    try:
        async with open_backend(url, **options) as backend:
            handle = str((await backend.create_conversation(session_id="k")).id)
            await backend.add_message(handle, "user", "before")
            async with httpx.AsyncClient(trust_env=False) as http:
                await http.post(
                    f"http://127.0.0.1:{port}/_admin/faults",
                    json={"latency": 30},
                    headers={"Authorization": "Bearer fault-key"},
                )

            async def kill_soon() -> None:
                await anyio.sleep(1.0)
                server.send_signal(signal.SIGKILL)

            async with anyio.create_task_group() as group:
                group.start_soon(kill_soon)
                with pytest.raises(TransportError):
                    await backend.add_message(handle, "user", "in flight")
        server.wait(10)
        server = _serve(path, port)
        async with open_backend(url, **options) as backend:
            read = await backend.get_conversation(handle)
            assert [m.content for m in read.messages] == ["before", "in flight"]
    finally:
        server.kill()
        server.wait(10)
    _check_intact(path, 2)
