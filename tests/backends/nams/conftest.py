"""Fixtures of the NAMS tests: the session-wide server (uvicorn on 127.0.0.1) and a
fresh workspace per test, with fault knobs reset after every test; and the mocked
service's ``api`` and ``memory`` (:mod:`.mocked`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from memory_core_dev.nams_server import NamsTestServer

# The mocked service's fixtures, for every module here that does not define its own.
from .mocked import api, memory  # noqa: F401


@pytest.fixture(autouse=True)
def _reset_faults(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    if "nams_server" in request.fixturenames:
        server: NamsTestServer = request.getfixturevalue("nams_server")
        server.faults.reset()


@pytest.fixture
def workspace() -> str:
    """A workspace no other test uses."""
    return NamsTestServer.workspace()
