"""What a Neo4j cluster (or Aura) needs from the Bolt backend, checked without a cluster.

Community Edition runs no cluster, so these tests check how the backend uses the driver:
``neo4j://`` URLs keep routing (a single instance answers the routing table for itself),
reads go through read transactions and writes through write transactions, every session
of one backend object shares one bookmark manager, and the driver's managed transactions
retry transient errors, which surface typed once the retries run out (``maybe_applied``
for writes). The driver object is wrapped to see how it is called; the only injected
failures are the driver exceptions a cluster would raise.
"""

from __future__ import annotations

import warnings
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

import neo4j
import pytest
from neo4j import exceptions as neo

from memory_core import MemoryBackend, TransportError, open_backend
from memory_core.backends.bolt import BoltStore
from memory_core.backends.bolt.config import parse_config
from memory_core.backends.bolt.errors import translate
from memory_core.backends.bolt.store import STATEMENT_ROWS
from memory_core_dev.neo4j_fixtures import Neo4jHandle

from .helpers import Graph

pytestmark = pytest.mark.anyio

Work = Callable[..., Awaitable[Any]]


@pytest.fixture(autouse=True)
def _quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """The driver waits 1 s before its first retry; these tests only count retries."""
    from neo4j._conf import WorkspaceConfig

    monkeypatch.setattr(WorkspaceConfig, "initial_retry_delay", 0.01)


def _routing(uri: str) -> str:
    """The test server's URL with the routing scheme (``bolt+s`` → ``neo4j+s``)."""
    scheme, rest = uri.split("://", 1)
    return scheme.replace("bolt", "neo4j") + "://" + rest


def _transient(code: str) -> neo.Neo4jError:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return neo.Neo4jError._hydrate_neo4j(code=code, message="the cluster is electing")


class _Session:
    """A real driver session whose transaction functions fail as the recorder says."""

    def __init__(self, session: neo4j.AsyncSession, recorder: _Recorder) -> None:
        self._session = session
        self._recorder = recorder

    async def __aenter__(self) -> _Session:
        await self._session.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._session.__aexit__(*exc)

    async def execute_read(self, work: Work) -> Any:
        return await self._session.execute_read(self._recorder.flaky(work, "read"))

    async def execute_write(self, work: Work) -> Any:
        return await self._session.execute_write(self._recorder.flaky(work, "write"))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)


class _Recorder:
    """Wraps the backend's real driver: records how sessions and queries are opened and
    fails the next transaction functions with ``pending`` (or every one with ``always``)."""

    def __init__(self, driver: neo4j.AsyncDriver) -> None:
        self._driver = driver
        self.sessions: list[dict[str, Any]] = []
        self.queries: list[dict[str, Any]] = []
        self.attempts: list[str] = []
        self.pending: list[BaseException] = []
        self.always: BaseException | None = None

    def flaky(self, work: Work, kind: str) -> Work:
        async def attempt(tx: Any, *args: Any) -> Any:
            self.attempts.append(kind)
            if self.always is not None:
                raise self.always
            if self.pending:
                raise self.pending.pop(0)
            return await work(tx, *args)

        return attempt

    def session(self, **options: Any) -> _Session:
        self.sessions.append(options)
        return _Session(self._driver.session(**options), self)

    async def execute_query(self, query: str, params: Any, **options: Any) -> Any:
        self.queries.append(options)
        kind = "read" if options["routing_"] == neo4j.RoutingControl.READ else "write"
        transform = options["result_transformer_"]
        # The transformer runs inside the driver's transaction function, so failing it
        # fails one attempt of the managed transaction, as a cluster error would.
        options["result_transformer_"] = self.flaky(transform, kind)
        return await self._driver.execute_query(query, params, **options)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._driver, name)


def _wrap(backend: MemoryBackend) -> _Recorder:
    store = backend.store
    assert isinstance(store, BoltStore) and store._conn._driver is not None
    recorder = _Recorder(store._conn._driver)
    store._conn._driver = recorder  # type: ignore[assignment]
    return recorder


def _bookmark_manager(backend: MemoryBackend) -> object:
    store = backend.store
    assert isinstance(store, BoltStore)
    return store._conn._bookmarks


@pytest.fixture
def routing_url(neo4j_server: Neo4jHandle) -> str:
    return _routing(neo4j_server.uri)


@pytest.fixture
async def routed(
    routing_url: str, neo4j_server: Neo4jHandle
) -> AsyncIterator[tuple[MemoryBackend, _Recorder]]:
    """A backend over ``neo4j://`` whose driver is wrapped (retries give up after 0.3 s)."""
    backend = open_backend(routing_url, auth=neo4j_server.auth, max_transaction_retry_time=0.3)
    async with backend:
        yield backend, _wrap(backend)


# ------------------------------------------------------------------ URLs


@pytest.mark.parametrize("scheme", ["neo4j", "neo4j+s", "neo4j+ssc"])
def test_routing_schemes_are_kept_with_their_routing_context(scheme: str) -> None:
    config = parse_config(
        f"{scheme}://abc123.databases.neo4j.io?policy=eu&database=memory",
        username="neo4j",
        password="s3cret",
    )
    parts = urlsplit(config.uri)
    assert parts.scheme == scheme
    assert parts.netloc == "abc123.databases.neo4j.io:7687"
    assert parts.query == "policy=eu"
    assert config.database == "memory"
    assert config.describe() == f"{scheme}://neo4j@abc123.databases.neo4j.io:7687/memory"


async def test_a_routing_url_opens_a_routing_driver_and_serves_reads_and_writes(
    routing_url: str, neo4j_server: Neo4jHandle, unique: Callable[[str], str]
) -> None:
    session = unique("s")
    async with open_backend(routing_url, auth=neo4j_server.auth) as backend:
        store = backend.store
        assert isinstance(store, BoltStore)
        assert isinstance(store._conn._driver, neo4j.AsyncNeo4jDriver)
        assert backend.describe().startswith("neo4j://")
        added = await backend.add_message(session, "user", "hello over routing")
        batch = await backend.add_messages_batch(
            session, [{"role": "assistant", "content": "routed too"}]
        )
        got = (await backend.get_conversation(session)).messages
        assert [m.id for m in got] == [added.id, batch[0].id]
        found = await backend.search_messages("routed", session_id=session)
        assert [m.id for m in found] == [batch[0].id]
        assert await backend.delete_message(added.id) is True
        assert session in [s.session_id for s in await backend.list_sessions(prefix=session)]
        assert await backend.clear_session(session) is True
        assert await backend.list_sessions(prefix=session) == []


# ------------------------------------------------------------------ sessions


def _long_batch(text: str) -> list[dict[str, Any]]:
    """A batch long enough to be written by a transaction function (``execute_write``)."""
    return [{"role": "user", "content": f"{text} {i}"} for i in range(STATEMENT_ROWS + 1)]


async def test_reads_use_read_transactions_and_writes_write_transactions(
    routed: tuple[MemoryBackend, _Recorder], unique: Callable[[str], str]
) -> None:
    backend, recorder = routed
    session = unique("s")
    await backend.add_message(session, "user", "one")  # one statement: execute_query
    assert [q["routing_"] for q in recorder.queries] == [neo4j.RoutingControl.WRITE]
    await backend.get_conversation(session)  # one statement: execute_query
    assert recorder.queries[-1]["routing_"] == neo4j.RoutingControl.READ
    await backend.add_messages_batch(session, _long_batch("two"))  # execute_write
    assert [s["default_access_mode"] for s in recorder.sessions] == [neo4j.WRITE_ACCESS]
    await backend.search_messages("two", session_id=session)  # execute_read
    assert recorder.sessions[-1]["default_access_mode"] == neo4j.READ_ACCESS
    assert recorder.attempts == ["write", "read", "write", "read"]


async def test_every_session_and_query_of_one_backend_shares_its_bookmarks(
    routed: tuple[MemoryBackend, _Recorder], unique: Callable[[str], str]
) -> None:
    backend, recorder = routed
    session = unique("s")
    manager = _bookmark_manager(backend)
    await backend.add_message(session, "user", "remember me")
    await backend.add_messages_batch(session, _long_batch("and me"))
    assert len((await backend.get_conversation(session, limit=5)).messages) == 5
    await backend.search_messages("me", session_id=session)
    assert len(recorder.sessions) == 2 and len(recorder.queries) == 2
    assert all(s["bookmark_manager"] is manager for s in recorder.sessions)
    assert all(q["bookmark_manager_"] is manager for q in recorder.queries)
    # The writes left a bookmark there, which the next read waits for on a cluster.
    assert await manager.get_bookmarks()  # type: ignore[attr-defined]


async def test_two_backend_objects_do_not_share_bookmarks(
    open_bolt: Callable[..., MemoryBackend],
) -> None:
    first, second = open_bolt(), open_bolt()
    assert _bookmark_manager(first) is not _bookmark_manager(second)


# ------------------------------------------------------------------ retries and errors

RETRIED = [
    pytest.param(lambda: _transient("Neo.ClientError.Cluster.NotALeader"), id="not-leader"),
    pytest.param(
        lambda: _transient("Neo.TransientError.General.DatabaseUnavailable"), id="unavailable"
    ),
    pytest.param(lambda: neo.SessionExpired("leader gone"), id="session-expired"),
    pytest.param(lambda: neo.ServiceUnavailable("no writer"), id="service-unavailable"),
]


@pytest.mark.parametrize("failure", RETRIED)
async def test_a_transient_cluster_error_is_retried_and_the_write_stored_once(
    routed: tuple[MemoryBackend, _Recorder],
    graph: Graph,
    unique: Callable[[str], str],
    failure: Callable[[], BaseException],
) -> None:
    backend, recorder = routed
    session = unique("s")
    recorder.pending = [failure()]
    await backend.add_message(session, "user", "single")
    recorder.pending = [failure()]
    await backend.add_messages_batch(session, _long_batch("batch"))
    recorder.pending = [failure()]
    await backend.get_conversation(session, limit=1)
    recorder.pending = [failure()]
    await backend.search_messages("batch", session_id=session)
    assert recorder.attempts == ["write"] * 4 + ["read"] * 4
    stored = graph(
        "MATCH (:Conversation {session_id: $s})-[:HAS_MESSAGE]->(m) RETURN count(m) AS n",
        s=session,
    )
    assert stored == [{"n": STATEMENT_ROWS + 2}]


LOST = [
    pytest.param(lambda: neo.ServiceUnavailable("no writer"), id="service-unavailable"),
    pytest.param(lambda: neo.SessionExpired("leader gone"), id="session-expired"),
    pytest.param(lambda: _transient("Neo.ClientError.Cluster.NotALeader"), id="not-leader"),
]
AT_COMMIT = [
    pytest.param(lambda: _transient("Neo.ClientError.Cluster.NotALeader"), id="not-leader"),
    pytest.param(
        lambda: _transient("Neo.TransientError.General.DatabaseUnavailable"), id="unavailable"
    ),
    pytest.param(lambda: neo.SessionExpired("leader gone"), id="session-expired"),
]


async def _write(backend: MemoryBackend, call: str, session: str) -> None:
    if call == "one-statement":
        await backend.add_message(session, "user", "x")
    else:
        await backend.add_messages_batch(session, _long_batch("x"))


@pytest.mark.parametrize("failure", AT_COMMIT)
@pytest.mark.parametrize("call", ["one-statement", "transaction"])
async def test_a_write_whose_commit_fails_until_retries_run_out_may_have_been_applied(
    routed: tuple[MemoryBackend, _Recorder],
    unique: Callable[[str], str],
    monkeypatch: pytest.MonkeyPatch,
    failure: Callable[[], BaseException],
    call: str,
) -> None:
    """The cluster answers each COMMIT with an error (its leader switching): such a
    commit may still be applied, so the caller must not be told nothing was written."""
    backend, _ = routed
    commits: list[str] = []

    async def refused(tx: object) -> None:
        commits.append("commit")
        raise failure()

    monkeypatch.setattr(neo4j.AsyncManagedTransaction, "_commit", refused)
    with pytest.raises(TransportError) as raised:
        await _write(backend, call, unique("s"))
    assert len(commits) >= 2  # the driver retried before giving up
    assert raised.value.maybe_applied is True
    assert raised.value.retryable is True
    assert "may or may not have been applied" in str(raised.value)
    assert raised.value.__cause__ is None


@pytest.mark.parametrize("failure", LOST)
@pytest.mark.parametrize("call", ["one-statement", "transaction"])
async def test_a_write_that_never_reached_its_commit_applied_nothing(
    routed: tuple[MemoryBackend, _Recorder],
    unique: Callable[[str], str],
    graph: Graph,
    failure: Callable[[], BaseException],
    call: str,
) -> None:
    backend, recorder = routed
    session = unique("s")
    recorder.always = failure()
    with pytest.raises(TransportError) as raised:
        await _write(backend, call, session)
    assert len(recorder.attempts) >= 2  # the driver retried before giving up
    assert raised.value.maybe_applied is False
    assert raised.value.retryable is True
    assert raised.value.__cause__ is None
    assert graph("MATCH (c:Conversation {session_id: $s}) RETURN c", s=session) == []


@pytest.mark.parametrize("failure", LOST)
@pytest.mark.parametrize("call", ["one-statement", "transaction"])
async def test_a_read_that_outlasts_the_retries_says_nothing_was_applied(
    routed: tuple[MemoryBackend, _Recorder],
    unique: Callable[[str], str],
    failure: Callable[[], BaseException],
    call: str,
) -> None:
    backend, recorder = routed
    session = unique("s")
    recorder.always = failure()
    with pytest.raises(TransportError) as raised:
        if call == "one-statement":
            await backend.get_conversation(session)
        else:
            await backend.search_messages("x", session_id=session)
    assert len(recorder.attempts) >= 2
    assert raised.value.maybe_applied is False
    assert raised.value.retryable is True
    assert raised.value.__cause__ is None


@pytest.mark.parametrize(
    ("exc", "maybe_applied"),
    [
        (neo.ServiceUnavailable("no writer"), True),
        (neo.SessionExpired("leader gone"), True),
        (_transient("Neo.TransientError.Transaction.DeadlockDetected"), True),
        (_transient("Neo.ClientError.General.ForbiddenOnReadOnlyDatabase"), True),
        (ConnectionResetError("reset"), True),
        (TimeoutError(), True),
        # Refused before or by the statement: the transaction rolled back.
        (_transient("Neo.ClientError.Statement.SyntaxError"), False),
        (_transient("Neo.ClientError.Security.Unauthorized"), False),
        (neo.ClientError("failed to obtain a connection from the pool within 1s"), False),
    ],
)
def test_which_writes_failed_after_a_commit_may_have_been_applied(
    exc: BaseException, maybe_applied: bool
) -> None:
    where = "bolt backend at neo4j://h:7687"
    assert translate(exc, where, commit_sent=True).maybe_applied is maybe_applied
    assert translate(exc, where).maybe_applied is False


def test_a_commit_lost_in_a_write_keeps_its_own_message() -> None:
    error = translate(neo.IncompleteCommit("x"), "w", commit_sent=True)
    assert "lost while committing" in str(error)
    assert error.maybe_applied is True and error.retryable is True
