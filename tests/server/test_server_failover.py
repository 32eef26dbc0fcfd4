"""Two ``memory-core serve`` processes over one pg_auto_failover pair keep serving through
a switchover (issue 52).

Each server is a process of its own on 127.0.0.1, over the formation's multi-host URL
(``target_session_attrs=read-write``), with ``require_standby=true`` (pg_auto_failover
2.0 now and then lets the old primary take writes without its standby during a
switchover: its bug #774, on the Reliability page). Four NAMS clients (the library's NAMS backend,
which resends where safe) write through them, two per server: single messages and batches
of 10. A write that failed with ``maybe_applied=False`` is sent again by the writer; one
with ``maybe_applied=True`` is not (the NAMS wire has no idempotency key). Meanwhile the
primary is switched over, or its postmaster killed. Afterwards, read through the other
server: every acknowledged write is stored once, nothing is stored twice, a write that
failed without ``maybe_applied`` is stored only by its resend, and every error a writer
saw is a retryable ``TransportError``.

``MEMORY_CORE_SERVER_FAILOVERS`` (default 1) sets how many faults each test makes; the
figure on the Reliability page comes from a run with 5.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import httpx
import pytest

from memory_core import MemoryBackend, MemoryCoreError, TransportError, open_backend
from memory_core_dev.pg_ha import HaFormation, primaries_left_writing
from memory_core_dev.postgres_server import free_port

pytestmark = pytest.mark.anyio
KEY = "failover-test-key"
BATCH = 10
PER_SESSION = 50  # messages per session
FAILOVERS = int(os.environ.get("MEMORY_CORE_SERVER_FAILOVERS", "1"))


@dataclass
class Tally:
    """Acknowledged contents per session, contents whose outcome is unknown, errors,
    acknowledged writes per writer and when each content was acknowledged."""

    acknowledged: dict[str, list[str]] = field(default_factory=dict)
    unknown: set[str] = field(default_factory=set)
    errors: list[MemoryCoreError] = field(default_factory=list)
    acked_at: list[float] = field(default_factory=list)
    writes: dict[str, int] = field(default_factory=dict)
    wall: dict[str, float] = field(default_factory=dict)  # content: acknowledged at (epoch)


def _serve(url: str, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    with open(log, "ab") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "memory_core.cli", "serve", url, "--port", str(port)],
            env={**os.environ, "NAMS_SERVER_API_KEYS": KEY},
            stdout=subprocess.DEVNULL,
            stderr=out,
        )
    root = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if httpx.get(root + "/health", trust_env=False, timeout=2).status_code == 200:
                return process, f"nams+{root}/v1"
        except httpx.HTTPError:
            time.sleep(0.2)
    process.kill()
    raise RuntimeError(f"the server did not start:\n{log.read_text()[-3000:]}")


@pytest.fixture
def servers(pg_ha: HaFormation, tmp_path: Path) -> Iterator[list[str]]:
    """Two server processes over one fresh schema of the formation; their client URLs."""
    schema = f"srv_{uuid.uuid4().hex[:12]}"
    url = f"{pg_ha.url}&schema={schema}&connect_timeout=2&require_standby=true"
    started = [_serve(url, tmp_path / f"server-{n}.log") for n in range(2)]
    try:
        yield [client_url for _, client_url in started]
    finally:
        for process, _ in started:
            process.terminate()
        for process, _ in started:
            process.wait(timeout=30)


async def _write(
    write: Callable[[], Awaitable[object]], contents: list[str], session: str, tally: Tally
) -> bool:
    """One write, sent again while it fails with ``maybe_applied=False``; one that may
    have been applied is not sent again (its contents are then unknown). Whether it was
    acknowledged."""
    while True:
        try:
            await write()
        except MemoryCoreError as exc:
            tally.errors.append(exc)
            if not exc.retryable:
                raise
            await anyio.sleep(0.1)
            if exc.maybe_applied:
                tally.unknown.update(contents)
                return False
            continue
        tally.acknowledged.setdefault(session, []).extend(contents)
        tally.acked_at.append(time.monotonic())
        tally.wall.update(dict.fromkeys(contents, time.time()))
        return True


async def _writer(
    client: MemoryBackend, name: str, batched: bool, tally: Tally, stop: anyio.Event
) -> None:
    """Writes until ``stop``; a new session every 50 messages (NAMS reads 200 at most)."""
    for k in itertools.count():
        if stop.is_set():
            return
        write: Callable[[], Awaitable[object]]
        if batched:
            session = f"{name}-{k // (PER_SESSION // BATCH)}"
            contents = [f"{session}/{k}/{i}" for i in range(BATCH)]
            items = [{"role": "user", "content": c} for c in contents]
            write = lambda: client.add_messages_batch(session, items)  # noqa: B023,E731
        else:
            session = f"{name}-{k // PER_SESSION}"
            contents = [f"{session}/{k}"]
            write = lambda: client.add_message(session, "user", contents[0])  # noqa: B023,E731
        if await _write(write, contents, session, tally):
            tally.writes[name] = tally.writes.get(name, 0) + 1


def _client(url: str, workspace: str) -> MemoryBackend:
    return open_backend(
        url, api_key=KEY, workspace_id=workspace, session_names="portable", trust_env=False
    )


async def _written(tally: Tally, need: dict[str, int]) -> None:
    """Until each writer has had ``need`` writes acknowledged."""
    while any(tally.writes.get(w, 0) < n for w, n in need.items()):
        await anyio.sleep(0.05)


async def _through_failovers(
    pg_ha: HaFormation, urls: list[str], workspace: str, writers: list[str], fault: str
) -> Tally:
    """Writer ``n`` through server ``n % 2``, batches when ``n`` is odd; ``fault`` names
    the formation's method that makes the fault."""
    tally, stop = Tally(), anyio.Event()
    clients = [_client(urls[n % 2], workspace) for n in range(len(writers))]
    async with anyio.create_task_group() as group:
        for n, (client, name) in enumerate(zip(clients, writers, strict=True)):
            await client.connect()
            group.start_soon(_writer, client, name, n % 2 == 1, tally, stop)
        await _written(tally, dict.fromkeys(writers, 3))
        for _ in range(FAILOVERS):
            need = {w: tally.writes.get(w, 0) + 3 for w in writers}
            await anyio.to_thread.run_sync(getattr(pg_ha, fault))
            await _written(tally, need)
        stop.set()
    for client in clients:
        await client.close()
    return tally


async def _check(urls: list[str], workspace: str, writers: list[str], tally: Tally) -> None:
    """Each session read through the server its writer did not write through."""
    readers = [_client(url, workspace) for url in urls]
    try:
        for session, acknowledged in tally.acknowledged.items():
            writer = writers.index(session.split("-")[0])
            read = await readers[(writer + 1) % 2].get_conversation(session, limit=200)
            stored = [m.content for m in read.messages]
            assert len(stored) == len(set(stored)), f"{session}: a write stored twice"
            assert set(acknowledged) <= set(stored), f"{session}: acknowledged writes lost"
            extra = set(stored) - set(acknowledged)
            assert extra <= tally.unknown, f"{session}: unexpected writes {sorted(extra)[:3]}"
    finally:
        for reader in readers:
            await reader.close()


def _diagnosis(pg_ha: HaFormation, tally: Tally, logs: Path) -> str:
    """When each acknowledged write was acknowledged (UTC), the monitor's history and the
    servers' logs: to tell which node took a lost write."""
    stamp = [
        f"{time.strftime('%H:%M:%S', time.gmtime(at))}.{int(at % 1 * 1e6):06d} {content}"
        for content, at in sorted(tally.wall.items(), key=lambda item: item[1])
    ]
    history = pg_ha.event_log()
    left = primaries_left_writing(history)
    events = [f"primaries left writing alone (pg_auto_failover #774): {left}"]
    events += ["\t".join(row) for row in history]
    servers = [f"{log.name}:\n{log.read_text()[-4000:]}" for log in sorted(logs.glob("*.log"))]
    return "\n".join(["acknowledged:", *stamp, "monitor events:", *events, *servers])


@pytest.mark.parametrize("fault", ["failover", "kill_primary"])
async def test_two_servers_keep_serving_as_the_primary_changes(
    pg_ha: HaFormation, servers: list[str], fault: str, tmp_path: Path
) -> None:
    """``failover``: a switchover; ``kill_primary``: the primary's postmaster killed."""
    workspace = f"ws-{uuid.uuid4().hex[:12]}"
    writers = [f"w{n}" for n in range(4)]
    tally = await _through_failovers(pg_ha, servers, workspace, writers, fault)
    for error in tally.errors:
        assert isinstance(error, TransportError) and error.retryable, repr(error)
    try:
        await _check(servers, workspace, writers, tally)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{_diagnosis(pg_ha, tally, tmp_path)}") from None
    maybe = sum(e.maybe_applied for e in tally.errors)
    pause = max(b - a for a, b in itertools.pairwise(sorted(tally.acked_at)))
    print(  # the figures for RELIABILITY.md (run with -s)
        f"{FAILOVERS} {fault}: {len(tally.acked_at)} acknowledged writes, "
        f"{len(tally.errors)} errors ({maybe} maybe_applied), longest pause {pause:.2f} s, "
        f"{len(primaries_left_writing(pg_ha.event_log()))} primaries left writing (#774) "
        "in the formation's history"
    )
