"""psycopg exceptions → memory-core errors (no raw driver exception reaches a caller).

:func:`translate` maps the failure of a call; :func:`open_connection` opens a connection
and, when that fails, raises :func:`connect_error`'s error: it names the target (host,
port, database and user, never a secret) and libpq's reason in one line, with psycopg's
exception chained as its ``__cause__`` (libpq never quotes a password in these texts).
"""

from __future__ import annotations

import os
import re
from typing import Any

import psycopg
from psycopg import errors as pg_errors
from psycopg import pq
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import PoolTimeout

from memory_core.store import (
    AuthenticationError,
    ConfigurationError,
    MemoryCoreError,
    StoreError,
    TransportError,
)

from . import times
from .config import hide_secrets

_AUTH_STATES = ("28000", "28P01")  # invalid authorization, invalid password
# libpq reports a login the server refused with no SQLSTATE: known by its (English) text
_LOGIN_REFUSED = ("authentication failed", "no pg_hba.conf entry", "password must be")
# ... and a database the server (or PgBouncer) does not have, the same way
_NO_DATABASE = re.compile(r'database "(.*)" does not exist|no such database: (\S+)')
# ... and a user (role) it does not have
_NO_ROLE = re.compile(r'role "(.*)" does not exist')
# a connection parameter whose value libpq refuses before it connects (sslmode=bogus)
_BAD_VALUE = re.compile(
    r'invalid integer value "[^"]*" for connection option "(\w+)"|invalid (\w+) value'
)
# libpq's opening of each attempt's text, which the target already says
_ATTEMPT = re.compile(
    r"^(?:connection (?:failed|is bad): )?"
    r'(?:connection to server (?:at "[^"]*"(?:, port \d+)?|on socket "[^"]*") failed: )?'
)
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
        return AuthenticationError(f"postgres: permission denied for this user ({reason(exc)})")
    if isinstance(exc, pg_errors.ReadOnlySqlTransaction):
        return TransportError(
            "postgres: the server is read-only (a standby, or a primary being failed over); "
            "nothing was written. With several hosts in the URL, add "
            "target_session_attrs=read-write so that only the primary is used",
            retryable=True,
            maybe_applied=False,
        )
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
            f"postgres: the connection failed ({type(exc).__name__}: {reason(exc)})",
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


async def open_connection(conninfo: str, **options: Any) -> psycopg.AsyncConnection[Any]:
    """A new connection to ``conninfo`` (``options`` as for psycopg's ``connect``); when
    that fails, :func:`connect_error`'s error, psycopg's exception as its cause."""
    try:
        return await psycopg.AsyncConnection.connect(conninfo, **options)
    except psycopg.Error as exc:
        raise connect_error(exc, conninfo) from exc


def connect_error(exc: psycopg.Error, conninfo: str) -> MemoryCoreError:
    """The error for a connection to ``conninfo`` that could not be opened: the target
    and libpq's reason in one line. A database or role the server does not have, or a
    connection parameter libpq refuses, is a ``ConfigurationError`` (not retryable); a
    refused login an ``AuthenticationError`` saying where the password came from; the
    rest (a server down, unreachable or refusing TLS) a retryable ``TransportError``."""
    where = f"postgres backend at {_target(exc, conninfo)}"
    why = _hide(reason(exc), conninfo)
    made = _misconfigured(exc, where, why)
    if made is not None:
        return made
    if getattr(exc, "sqlstate", None) in _AUTH_STATES or _login_refused(exc):
        hint = _password_hint(exc, conninfo, why)
        return AuthenticationError(f"{where}: the server refused the login: {why}{hint}")
    if isinstance(exc, psycopg.OperationalError):
        return TransportError(
            f"{where}: cannot connect: {why}", retryable=True, maybe_applied=False
        )
    return translate(exc, write=False, sent=False)


def _misconfigured(exc: psycopg.Error, where: str, why: str) -> ConfigurationError | None:
    """A database or role the server lacks, or a parameter value libpq refuses."""
    database = _missing_database(exc)
    if database is not None:
        return ConfigurationError(
            f"{where}: the server has no database {database!r}: create it, or correct the "
            "database name in the URL (or PGDATABASE)"
        )
    text = str(exc)
    role = _NO_ROLE.search(text) if isinstance(exc, psycopg.OperationalError) else None
    if role is not None:
        return ConfigurationError(
            f"{where}: the server has no role (user) {role[1]!r}: create it (CREATE ROLE "
            "... LOGIN), or correct the user name in the URL (or PGUSER)"
        )
    value = _BAD_VALUE.search(text) if isinstance(exc, psycopg.OperationalError) else None
    if value is not None:
        name = value[1] or value[2]
        return ConfigurationError(
            f"{where}: libpq refuses the value of {name} (from the URL or its PG* variable): {why}"
        )
    return None


def reason(exc: BaseException) -> str:
    """libpq's (or psycopg's) text of ``exc`` in one line, without the opening that
    repeats the server's address."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    if not lines:
        return type(exc).__name__
    lines[0] = _ATTEMPT.sub("", lines[0])
    text = ""
    for line in lines:
        line = " ".join(line.replace("FATAL:", "").split())
        joint = " " if not text or text.endswith((".", "?", "!", ":")) else ". "
        text = f"{text}{joint}{line}" if text else line
    return text


def _target(exc: psycopg.Error, conninfo: str) -> str:
    """``host:port (database 'd', user 'u')`` as libpq tried it (from the URL, the
    ``PG*`` variables and libpq's defaults)."""
    wanted = ("host", "port", "dbname", "user")
    values = {
        item.keyword.decode(): item.val.decode(errors="replace")
        for item in pq.Conninfo.get_defaults()
        if item.val is not None and item.keyword.decode() in wanted
    }
    values.update({k: str(v) for k, v in conninfo_to_dict(conninfo).items() if k in wanted})
    pgconn = getattr(exc, "pgconn", None)
    for key, attribute in zip(wanted, ("host", "port", "db", "user"), strict=True):
        try:
            found = getattr(pgconn, attribute) if pgconn is not None else None
        except psycopg.Error:  # a connection already finished
            found = None
        if found:
            values[key] = found.decode(errors="replace")
    host = values.get("host") or "the local socket"
    user = values.get("user")
    database = values.get("dbname") or user
    return f"{host}:{values.get('port') or 5432} (database {database!r}, user {user!r})"


def _password_hint(exc: psycopg.Error, conninfo: str, why: str) -> str:
    """Where the refused password came from, when the server asked for one."""
    pgconn = getattr(exc, "pgconn", None)
    if "password" not in why.lower() and not (pgconn is not None and pgconn.needs_password):
        return ""  # refused for another reason (no pg_hba.conf entry, peer, …)
    if "no password supplied" in why:
        return (
            "; no password was given: put it in the URL (postgresql://user:PASSWORD@host/db) "
            "or in PGPASSWORD"
        )
    if conninfo_to_dict(conninfo).get("password"):
        return "; the password is the URL's (postgresql://user:PASSWORD@host/db)"
    if os.environ.get("PGPASSWORD"):
        return "; the password comes from PGPASSWORD (the URL has none)"
    return "; the password came from the password file (PGPASSFILE, else ~/.pgpass)"


def _hide(text: str, conninfo: str) -> str:
    """``text`` with the secrets of ``conninfo`` and ``PGPASSWORD`` replaced by ``***``."""
    return hide_secrets(text, conninfo, os.environ.get("PGPASSWORD", ""))
