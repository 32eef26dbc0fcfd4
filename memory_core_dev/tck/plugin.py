"""pytest plugin running the TCK's tests on memory-core (load with
``-p memory_core_dev.tck.plugin`` and ``--noconftest``; see :mod:`memory_core_dev.tck`).

It stands in for the kit's conftest files: the tier markers, the ``adapter`` fixture
(:class:`~memory_core_dev.tck.adapter.MemoryCoreAdapter` on ``--memory-url``), a clean
memory before each test, ``session_id`` and ``mock_embedder``. A test whose operation
raises ``NotSupportedError`` for a capability flag the backend declares False is skipped
as not applicable (``n/a: …``); any other refusal fails. The kit's async tests run
on one asyncio event loop for the whole run, which the adapter's backend lives on (the
kit expects pytest-asyncio's auto mode; run with ``-p no:anyio``). ``--tck-json FILE``
writes each test's outcome and markers in the shape the kit's compliance report reads.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest

from memory_core import NotSupportedError, SessionRequiredError
from memory_core.capabilities import HOOKS_FOR_FLAG

from .adapter import MemoryCoreAdapter

TIERS = ("bronze", "silver", "gold", "platinum")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("memory-core TCK")
    group.addoption("--memory-url", default="memory://", help="the backend the TCK runs on")
    group.addoption("--tck-json", default=None, help="write the outcomes for the report here")


def pytest_configure(config: pytest.Config) -> None:
    for tier in TIERS:
        config.addinivalue_line("markers", f"{tier}: the TCK's {tier} tier")
    _OUTCOMES.clear()


_LOOP: list[asyncio.AbstractEventLoop] = []


def _loop() -> asyncio.AbstractEventLoop:
    if not _LOOP:
        _LOOP.append(asyncio.new_event_loop())
    return _LOOP[0]


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Run a coroutine test on the run's event loop."""
    if not inspect.iscoroutinefunction(pyfuncitem.obj):
        return None
    names = pyfuncitem._fixtureinfo.argnames
    arguments = {name: pyfuncitem.funcargs[name] for name in names}
    try:
        _loop().run_until_complete(pyfuncitem.obj(**arguments))
    except NotSupportedError as refused:
        adapter = pyfuncitem.funcargs.get("adapter")
        why = _announced(refused, adapter) if isinstance(adapter, MemoryCoreAdapter) else None
        if why is None:
            raise  # a refusal the backend's capabilities do not announce is a failure
        pytest.skip(f"{NOT_APPLICABLE}{why}")
    return True


NOT_APPLICABLE = "n/a: "
_ARGUMENT_REFUSED = "cannot be honoured"


def _announced(refused: NotSupportedError, adapter: MemoryCoreAdapter) -> str | None:
    """Why ``refused`` is a capability the backend declares it lacks, or ``None``: a
    method whose flag is False, a search without a session where ``search_global`` is
    False, or an argument the backend cannot honour (refused because it is strict)."""
    if isinstance(refused, SessionRequiredError) and not adapter.claims("search_global"):
        return f"{refused.method} without a session needs search_global"
    if _ARGUMENT_REFUSED in refused.message:
        return f"{refused.method}: {refused.message} ({refused.workaround})"
    for flag, hooks in HOOKS_FOR_FLAG.items():
        if refused.method in hooks and not adapter.claims(flag):
            return f"{refused.method} needs {flag}, which the backend lacks"
    return None


def pytest_unconfigure() -> None:
    while _LOOP:
        _LOOP.pop().close()


@pytest.fixture(scope="session")
def adapter(request: pytest.FixtureRequest) -> Iterator[MemoryCoreAdapter]:
    made = MemoryCoreAdapter(request.config.getoption("--memory-url"))
    _loop().run_until_complete(made.setup())
    yield made
    _loop().run_until_complete(made.teardown())


@pytest.fixture(autouse=True)
def _clean(adapter: MemoryCoreAdapter) -> None:
    _loop().run_until_complete(adapter.clear_all_data())


@pytest.fixture
def session_id() -> str:
    return f"tck-{uuid4()}"


@pytest.fixture
def mock_embedder() -> Any:
    from tck.fixtures.mocks import MockEmbedder

    return MockEmbedder()


_OUTCOMES: list[dict[str, Any]] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        _record(report)


def _record(report: pytest.TestReport) -> None:
    _OUTCOMES.append(
        {
            "nodeid": report.nodeid,
            "outcome": "failed" if report.outcome == "failed" else report.outcome,
            "keywords": sorted(report.keywords),
            "duration": report.duration,
            "reason": _reason(report) if report.skipped else "",
            "call": {"longrepr": str(report.longrepr) if report.failed else ""},
        }
    )


def pytest_sessionfinish(session: pytest.Session) -> None:
    path = session.config.getoption("--tck-json")
    if path:
        body = {"created": time.time(), "tests": _OUTCOMES}
        Path(path).write_text(json.dumps(body, indent=1), encoding="utf-8")


def _reason(report: pytest.TestReport) -> str:
    """A skip's message (pytest keeps it as ``(file, line, message)``)."""
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)
