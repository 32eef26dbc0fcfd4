"""The NAMS-compatible server for tests: uvicorn on 127.0.0.1, a random port, a thread.

:func:`shared_nams_server` starts one server per backing URL for the whole test run
(stopped at interpreter exit) — tests keep apart by using their own workspace
(:meth:`NamsTestServer.workspace`). :func:`start_nams_server` starts a private one for a
test that needs its own settings; stop it (or use it as a context manager).

The server runs in this process, so tests turn fault knobs on ``server.faults`` and read
``server.traffic`` (requests with their client address = TCP connection) directly.

Fixtures (import them into a conftest or test module):

* ``nams_server`` — session-wide, backed by ``memory://``;
* ``nams_bolt_server`` — session-wide, backed by the real Neo4j of ``neo4j_server``.
"""

from __future__ import annotations

import atexit
import os
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from memory_core import MemoryBackend, open_backend
from memory_core.server import BackgroundServer, Faults, Traffic, create_app
from memory_core.server.connections import ConnectionLimits
from memory_core.server.traffic import RequestRecord

API_KEY = "test-key-unbound"
"""A key that may act in any workspace (named by ``X-Workspace-Id``)."""
BOUND_KEY = "test-key-team-a"
BOUND_WORKSPACE = "team-a"
"""``BOUND_KEY`` only ever acts in this workspace."""
KEYS = (API_KEY, f"{BOUND_KEY}={BOUND_WORKSPACE}")


class NamsTestServer:
    """A running NAMS-compatible server and helpers to talk to it."""

    def __init__(
        self,
        backend_url: str = "memory://",
        *,
        connections: ConnectionLimits | None = None,
        **app_options: Any,
    ) -> None:
        app_options.setdefault("api_keys", KEYS)
        app_options.setdefault("admin", True)
        self.backend_url = backend_url
        self.faults = Faults()
        self.traffic = Traffic()
        self.app = create_app(backend_url, faults=self.faults, traffic=self.traffic, **app_options)
        self._server = BackgroundServer(self.app, connections=connections)

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1``."""
        return self._server.base_url

    @property
    def url(self) -> str:
        """The adapter URL: ``nams+http://127.0.0.1:<port>/v1``."""
        return "nams+" + self.base_url

    def start(self) -> NamsTestServer:
        self._server.start()
        return self

    def stop(self) -> None:
        self._server.stop()

    def __enter__(self) -> NamsTestServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @staticmethod
    def workspace(prefix: str = "ws") -> str:
        """A fresh workspace id: nothing else in the run uses it."""
        return f"{prefix}-{uuid.uuid4().hex[:12]}"

    def client(self, workspace: str | None = None, key: str = API_KEY) -> httpx.Client:
        """A raw HTTP client on the base URL with these headers; proxy variables ignored."""
        return httpx.Client(
            base_url=self.base_url, headers=self.headers(workspace, key), trust_env=False
        )

    def headers(self, workspace: str | None = None, key: str = API_KEY) -> dict[str, str]:
        """Request headers for raw HTTP tests."""
        headers = {"Authorization": f"Bearer {key}"}
        if workspace is not None:
            headers["X-Workspace-Id"] = workspace
        return headers

    def backend(self, workspace: str | None = None, **options: Any) -> MemoryBackend:
        """A ``MemoryBackend`` for this server (unbound key, the given workspace, proxy
        variables ignored). Server-id mode unless ``session_names="portable"`` is passed:
        most NAMS tests check the reference behaviour."""
        options.setdefault("api_key", API_KEY)
        options.setdefault("trust_env", False)
        options.setdefault("session_names", "server")
        if workspace is not None:
            options.setdefault("workspace_id", workspace)
        return open_backend(self.url, **options)

    def records(self, workspace: str | None = None) -> list[RequestRecord]:
        """Requests served so far (of one workspace, when given). Requests answered before
        authentication (forced 429/503, dropped connections) have no workspace."""
        found = self.traffic.records()
        return found if workspace is None else [r for r in found if r.workspace == workspace]

    def mark(self) -> int:
        """A mark in the request record, for :meth:`since`."""
        return self.traffic.total

    def since(self, mark: int) -> list[RequestRecord]:
        """Every request recorded after ``mark`` (tests run one at a time)."""
        return self.traffic.since(mark)


def start_nams_server(backend_url: str = "memory://", **app_options: Any) -> NamsTestServer:
    """A private, started server (stop it when done)."""
    return NamsTestServer(backend_url, **app_options).start()


_shared: dict[str, NamsTestServer] = {}
_shared_lock = threading.Lock()


def shared_nams_server(backend_url: str = "memory://") -> NamsTestServer:
    """The one server of this run for ``backend_url`` (started on first use)."""
    with _shared_lock:
        server = _shared.get(backend_url)
        if server is None:
            server = start_nams_server(backend_url)
            _shared[backend_url] = server
        return server


def _forget_shared() -> None:
    """In a forked child: the servers' threads stayed in the parent, which still serves
    their sockets with its own fault knobs and request record, so the child's knobs
    would turn nothing. The child starts its own on first use (mutmut forks a child per
    mutant from a process that ran the tests once)."""
    global _shared_lock
    _shared.clear()
    _shared_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_shared)


@atexit.register
def _stop_shared() -> None:
    for server in list(_shared.values()):
        server.stop()
    _shared.clear()


@pytest.fixture(scope="session")
def nams_server() -> Iterator[NamsTestServer]:
    """The session's NAMS server over the embedded ``memory://`` store."""
    server = shared_nams_server("memory://")
    yield server
    server.faults.reset()


@pytest.fixture(scope="session")
def nams_bolt_server(neo4j_server: Any) -> Iterator[NamsTestServer]:
    """The session's NAMS server over the real Neo4j of ``neo4j_server`` (stopped before
    Neo4j is)."""
    options: dict[str, Any] = {}
    if neo4j_server.auth is not None:
        options["backend_options"] = {"auth": neo4j_server.auth}
    with NamsTestServer(neo4j_server.uri, **options) as server:
        yield server
