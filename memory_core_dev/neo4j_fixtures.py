"""Pytest fixtures for the real Neo4j server.

Import them into the top-level conftest::

    from memory_core_dev.neo4j_fixtures import neo4j_clean, neo4j_server  # noqa: F401

or load this module as a plugin (``pytest -p memory_core_dev.neo4j_fixtures``).

``neo4j_server`` (session scope) yields a :class:`Neo4jHandle`:

* If ``NEO4J_URI`` is set, that server is used, with ``NEO4J_USERNAME`` /
  ``NEO4J_PASSWORD`` when given; it is only checked for reachability, and never wiped
  unless ``NEO4J_THROWAWAY=1`` says it is a scratch server of this run's own (the
  mutation script's, shared by its test runs one after another).
* Otherwise one Neo4j Community server is started for the whole run (see
  :mod:`memory_core_dev.neo4j_server`) and stopped at the end of the session
  (and, as a fallback, at interpreter exit).

It never skips: if Neo4j cannot be reached or started, the fixture errors and
the run fails.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from memory_core_dev.neo4j_server import Neo4jServer

__all__ = [
    "Neo4jHandle",
    "neo4j_clean",
    "neo4j_server",
    "neo4j_wipe",
]

Auth = tuple[str, str] | None

PRIVATE = "needs a Neo4j of its own"
"""How every skip of a test that cannot run on a server the user runs begins (the tests
are marked ``neo4j_private``: scripts/test runs them on the Neo4j it starts)."""


@dataclass
class Neo4jHandle:
    """What the tests get: where the server is and how to log in."""

    uri: str
    auth: Auth
    _server: Neo4jServer | None = field(default=None, repr=False)
    throwaway: bool = False
    """An external server (``NEO4J_URI``) the tests may wipe all the same."""

    @property
    def external(self) -> bool:
        """True when the server comes from ``NEO4J_URI`` (not started by us)."""
        return self._server is None

    @property
    def wipeable(self) -> bool:
        """True when the tests may delete everything in it: ours, or a throwaway."""
        return self._server is not None or self.throwaway

    @property
    def can_restart(self) -> bool:
        return self._server is not None

    def require_wipeable(self, why: str) -> None:
        """Skip the calling test, saying ``why`` it must empty the database, unless it may:
        never on a server the user runs (``NEO4J_URI`` without ``NEO4J_THROWAWAY=1``)."""
        if not self.wipeable:
            pytest.skip(f"{PRIVATE}: {why}; NEO4J_URI names a server the tests never empty")

    def require_own(self, why: str) -> None:
        """Skip the calling test, saying ``why`` it needs the server this test session
        started (to restart it, or to check its configuration), on any other."""
        if self.external:
            pytest.skip(f"{PRIVATE}: {why}; NEO4J_URI names a server this session did not start")

    def restart(self) -> None:
        """Stop and start the server (same port, same data).

        Only possible for the server the suite started itself; for an external
        server (``NEO4J_URI``) this raises RuntimeError.
        """
        if self._server is None:
            raise RuntimeError(
                f"neo4j_server.restart() is not possible: the server at {self.uri} is external "
                "(NEO4J_URI is set) and was not started by the test-suite. Unset NEO4J_URI to "
                "let the suite start its own Neo4j."
            )
        self._server.restart()


def _auth_from_env() -> Auth:
    user = os.environ.get("NEO4J_USERNAME")
    password = os.environ.get("NEO4J_PASSWORD")
    if user is None and password is None:
        return None
    if not user or password is None:
        raise RuntimeError(
            "NEO4J_USERNAME and NEO4J_PASSWORD must be set together (or neither, for a "
            "server without auth)"
        )
    return (user, password)


def _check_reachable(uri: str, auth: Auth) -> None:
    from neo4j import GraphDatabase

    try:
        with GraphDatabase.driver(uri, auth=auth, connection_timeout=15.0) as driver:
            driver.execute_query("RETURN 1")
    except Exception as exc:
        raise RuntimeError(f"the Neo4j server at NEO4J_URI={uri} is not usable: {exc!r}") from exc


@pytest.fixture(scope="session")
def neo4j_server() -> Iterator[Neo4jHandle]:
    """The Neo4j server for this test run (started once, or taken from NEO4J_URI)."""
    uri = os.environ.get("NEO4J_URI")
    if uri:
        auth = _auth_from_env()
        _check_reachable(uri, auth)
        throwaway = os.environ.get("NEO4J_THROWAWAY") == "1"
        yield Neo4jHandle(uri=uri, auth=auth, throwaway=throwaway)
        return

    server = Neo4jServer()
    try:
        server.start()
        yield Neo4jHandle(uri=server.uri, auth=server.auth, _server=server)
    finally:
        # Runs on success, on test failures and on errors in start(); the
        # module's atexit hook is the fallback if this never runs.
        server.close()


def neo4j_wipe(uri: str, auth: Auth, database: str | None = None) -> None:
    """Delete every node and relationship; indexes and constraints are kept."""
    from neo4j import GraphDatabase

    # CALL { ... } IN TRANSACTIONS needs an auto-commit transaction, hence
    # session.run(). Notifications are off: the importing-WITH form is
    # deprecated from 5.23 but is the one every 5.x server understands.
    with (
        GraphDatabase.driver(uri, auth=auth) as driver,
        driver.session(database=database, notifications_min_severity="OFF") as session,
    ):
        session.run("MATCH (n) CALL { WITH n DETACH DELETE n } IN TRANSACTIONS").consume()


@pytest.fixture
def neo4j_clean(neo4j_server: Neo4jHandle) -> Neo4jHandle:
    """The session server, emptied of all nodes before the test; on a server the tests may
    not empty (``NEO4J_URI``, not a throwaway) the test skips, saying so."""
    neo4j_server.require_wipeable("it starts from an empty database")
    neo4j_wipe(neo4j_server.uri, neo4j_server.auth)
    return neo4j_server
