"""The CrewAI tests' environment (run only by ``scripts/test_isolated crewai``, in
``.venv-crewai``; the main suite never collects ``tests/isolated``).

Before crewai is imported: its telemetry and tracing are off (``CREWAI_DISABLE_TELEMETRY``,
``OTEL_SDK_DISABLED``, ``CREWAI_TRACING_ENABLED=false``, no version check), what it writes
goes to a temporary directory (``CREWAI_STORAGE_DIR``, ``HOME``, ``XDG_DATA_HOME``), and this
process may open TCP connections to the loopback only: any other address raises
``OSError`` before a packet is sent, so a test that would reach the network fails instead.

The servers are the main suite's (``tests/conftest.py``: ``postgres_server``,
``nams_server``); ``crew_store`` is a real store of each kind the tests use.
"""

from __future__ import annotations

import atexit
import importlib.util
import ipaddress
import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

if importlib.util.find_spec("crewai") is None:
    raise pytest.UsageError(
        "tests/isolated/crewai runs in its own environment: bash scripts/test_isolated crewai"
    )

_STORAGE_DIR = tempfile.mkdtemp(prefix="crewai-tests-")
atexit.register(shutil.rmtree, _STORAGE_DIR, ignore_errors=True)
os.environ.update(
    CREWAI_DISABLE_TELEMETRY="true",
    CREWAI_DISABLE_TRACKING="true",
    OTEL_SDK_DISABLED="true",
    CREWAI_TRACING_ENABLED="false",
    CREWAI_DISABLE_VERSION_CHECK="true",
    CREWAI_STORAGE_DIR=_STORAGE_DIR,
    # what crewai keeps per user (task outputs, a key file under ~/.local/share): here too
    HOME=_STORAGE_DIR,
    XDG_DATA_HOME=_STORAGE_DIR,
)
for _key in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE"):
    os.environ.pop(_key, None)  # no hosted model can be reached by mistake

_connect = socket.socket.connect
_connect_ex = socket.socket.connect_ex


def _loopback_only(address: Any) -> None:
    host = address[0] if isinstance(address, tuple) else None
    if host is None:
        return  # a Unix socket
    try:
        local = ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        local = host == "localhost"
    if not local:
        raise OSError(f"the CrewAI tests connect to 127.0.0.1 only, not {address!r}")


def _guarded_connect(self: socket.socket, address: Any) -> None:
    _loopback_only(address)
    _connect(self, address)


def _guarded_connect_ex(self: socket.socket, address: Any) -> int:
    _loopback_only(address)
    return _connect_ex(self, address)


socket.socket.connect = _guarded_connect  # type: ignore[method-assign]
socket.socket.connect_ex = _guarded_connect_ex  # type: ignore[method-assign]

from memory_core_dev.sync_stores import SyncStore, opened_store  # noqa: E402


def pytest_configure(config: pytest.Config) -> None:
    # crewai's own code warns about its deprecated fields on every crew it builds
    config.addinivalue_line("filterwarnings", "ignore::DeprecationWarning:crewai")


FACT_KINDS = [pytest.param("embedded", id="embedded"), pytest.param("postgres", id="postgres")]
"""The stores with facts, which hold CrewAI memory; NAMS refuses it (tests name it)."""


@pytest.fixture(params=FACT_KINDS)
def crew_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SyncStore]:
    """A real store with facts (a SQLite file; a fresh schema on the run's PostgreSQL)
    with one blocking backend open."""
    with opened_store(request.param, request, tmp_path) as store:
        yield store


@pytest.fixture
def nams_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SyncStore]:
    """The run's NAMS-compatible server (a workspace of this test's own)."""
    with opened_store("nams", request, tmp_path) as store:
        yield store
