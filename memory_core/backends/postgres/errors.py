"""psycopg exceptions → memory-core errors (no raw driver exception reaches a caller)."""

from __future__ import annotations

import re

import psycopg
from psycopg import errors as pg_errors
from psycopg_pool import PoolTimeout

from memory_core.store import (
    AuthenticationError,
    ConfigurationError,
    MemoryCoreError,
    StoreError,
    TransportError,
)

from . import times

_AUTH_STATES = ("28000", "28P01")  # invalid authorization, invalid password
# libpq reports a login the server refused with no SQLSTATE: known by its (English) text
_LOGIN_REFUSED = ("authentication failed", "no pg_hba.conf entry", "password must be")
# ... and a database the server (or PgBouncer) does not have, the same way
_NO_DATABASE = re.compile(r'database "(.*)" does not exist|no such database: (\S+)')
# Prepared statements psycopg made on one server connection, missing (or another's by
# that name) on the next: a pooler in transaction mode moved the session.
_PREPARED = (pg_errors.InvalidSqlStatementName, pg_errors.DuplicatePreparedStatement)


def translate(exc: BaseException, *, write: bool, sent: bool) -> MemoryCoreError:
    """The error to raise for a psycopg or pool exception.

    ``write``: the call changes the store; ``sent``: the statement may have reached the
    server (a write may then have been applied if the connection broke at commit).
    """
    if isinstance(exc, PoolTimeout):
        return TransportError(
            "postgres: no connection from the pool in time (server down or pool exhausted)",
            retryable=True,
            maybe_applied=False,
        )
    if isinstance(exc, pg_errors.QueryCanceled):
        return TransportError(
            "postgres: the statement was cancelled (statement_timeout); nothing was written",
            retryable=True,
            maybe_applied=False,
        )
    state = getattr(exc, "sqlstate", None)
    if state in _AUTH_STATES or _login_refused(exc):
        return AuthenticationError("postgres: the server refused the credentials")
    if isinstance(exc, pg_errors.InsufficientPrivilege):
        return AuthenticationError("postgres: permission denied for this user")
    if isinstance(exc, pg_errors.SerializationFailure | pg_errors.DeadlockDetected):
        return TransportError(
            "postgres: the transaction conflicted with another; nothing was written",
            retryable=True,
            maybe_applied=False,
        )
    if _prepared_elsewhere(exc):
        return ConfigurationError(
            f"postgres: a prepared statement did not match the server connection "
            f"({type(exc).__name__}): a pooler in transaction mode (PgBouncer) hands each "
            "transaction to any server connection, and prepared statements do not follow; "
            "open the backend with prepared_statements=False"
        )
    missing = _missing_database(exc)
    if missing is not None:
        return ConfigurationError(
            f"postgres: the server has no database {missing!r}: create it, or correct the "
            "database name in the URL (or PGDATABASE)"
        )
    if isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
        return TransportError(
            f"postgres: the connection failed ({type(exc).__name__})",
            retryable=True,
            maybe_applied=write and sent,
        )
    if times.outside(exc):  # only a write's returned row: a read tolerates it (see .times)
        return StoreError(
            f"postgres: a stored time is outside Python's datetime range ({exc}); another "
            "program wrote it: correct it in the database"
        )
    if isinstance(exc, pg_errors.UndefinedTable | pg_errors.InvalidSchemaName):
        return ConfigurationError(
            "postgres: the memory-core tables are missing (was the schema dropped?)"
        )
    return StoreError(f"postgres: the server failed the operation ({type(exc).__name__})")


def _prepared_elsewhere(exc: BaseException) -> bool:
    """A prepared statement missing on the server connection, or another one there under
    its name (a bind with the wrong number of parameters)."""
    if isinstance(exc, _PREPARED):
        return True
    return isinstance(exc, pg_errors.ProtocolViolation) and 'prepared statement "' in str(exc)


def _missing_database(exc: BaseException) -> str | None:
    """The name of the database a connection attempt found missing, else None."""
    if not isinstance(exc, psycopg.OperationalError):
        return None
    found = _NO_DATABASE.search(str(exc))
    return None if found is None else (found[1] or found[2])


def _login_refused(exc: BaseException) -> bool:
    """A connection attempt the server refused at login (wrong or missing password, no
    ``pg_hba.conf`` entry), which libpq reports without a SQLSTATE."""
    pgconn = getattr(exc, "pgconn", None)
    if not isinstance(exc, psycopg.OperationalError) or pgconn is None:
        return False
    if pgconn.needs_password:
        return True
    text = str(exc)
    return any(marker in text for marker in _LOGIN_REFUSED)
