"""Translating neo4j driver exceptions into memory-core errors.

No driver exception reaches the caller: :func:`translate` maps each one to a typed
memory-core error whose message carries the Neo4j status code and the server's text,
never parameters or credentials. The original is not chained (``from None``): driver
exceptions can carry the connection address and query parameters.
"""

from __future__ import annotations

from neo4j import exceptions as neo

from memory_core.store import (
    AuthenticationError,
    ConfigurationError,
    InvalidRequestError,
    MemoryCoreError,
    StoreError,
    TransportError,
)

# Driver 6 raises its own class for a pool timeout; driver 5 a ClientError with this text.
_POOL_TIMEOUT: tuple[type[BaseException], ...] = tuple(
    cls for cls in (getattr(neo, "ConnectionAcquisitionTimeoutError", None),) if cls is not None
)
_POOL_TIMEOUT_TEXT = "obtain a connection from the pool"

# The text of a unique-constraint clash on the id of a :Message.
_OWN_MESSAGE_ID = "label `Message` and property `id`"

_CONFIG_CODES = (
    "Neo.ClientError.Database.DatabaseNotFound",
    "Neo.ClientError.Statement.UnsupportedAdministrationCommand",
)


def _code(exc: BaseException) -> str:
    code = getattr(exc, "code", None)
    return code if isinstance(code, str) else type(exc).__name__


def _text(exc: BaseException) -> str:
    message = getattr(exc, "message", None)
    if isinstance(message, str) and message:
        return message
    return str(exc) or type(exc).__name__


def translate(exc: BaseException, where: str, *, commit_sent: bool = False) -> MemoryCoreError:
    """The memory-core error for a driver exception raised while talking to ``where``
    (``commit_sent``: an attempt of this write reached its COMMIT, see :func:`_lost`)."""
    if isinstance(exc, MemoryCoreError):
        return exc
    code, text = _code(exc), _text(exc)
    if isinstance(exc, neo.IncompleteCommit):
        return TransportError(
            f"{where}: the connection was lost while committing; the write may or may not "
            "have been applied (retry it with an idempotency_key to be safe)",
            maybe_applied=True,
        )
    if isinstance(exc, neo.ConstraintError) and _OWN_MESSAGE_ID in text:
        # Message ids are ours (uuid4, chosen before the write): a clash means the driver
        # re-ran a transaction whose first commit did reach the store before the
        # connection dropped. Everything of it was applied; nothing was written twice.
        return TransportError(
            f"{where}: the connection was lost while committing and the retry found the "
            "write already applied (it was stored once; read it back before writing again)",
            maybe_applied=True,
            retryable=False,
        )
    if commit_sent and isinstance(exc, _LOST):
        return _lost(exc, where, code, text)
    if isinstance(exc, neo.AuthError | neo.Forbidden):
        return AuthenticationError(f"{where}: authentication or authorization failed ({code})")
    if isinstance(exc, neo.SessionExpired | neo.ServiceUnavailable):
        return TransportError(f"{where}: Neo4j is unreachable ({type(exc).__name__}: {text})")
    if isinstance(exc, neo.TransientError):
        return TransportError(f"{where}: transient failure that outlasted retries ({code}: {text})")
    if isinstance(exc, neo.ConfigurationError | neo.UnsupportedServerProduct):
        return ConfigurationError(f"{where}: {type(exc).__name__}: {text}")
    if isinstance(exc, _POOL_TIMEOUT) or (
        isinstance(exc, neo.ClientError) and _POOL_TIMEOUT_TEXT in f"{text} {exc}"
    ):
        return TransportError(f"{where}: no free connection in the pool in time ({exc})")
    if isinstance(exc, neo.ClientError) and code in _CONFIG_CODES:
        return ConfigurationError(f"{where}: {code}: {text}")
    if "too large to index" in text:
        return InvalidRequestError(f"a value is too long to be indexed by Neo4j ({code})")
    if isinstance(exc, neo.DatabaseError):
        return TransportError(f"{where}: the database failed ({code}: {text})", retryable=False)
    if isinstance(exc, neo.Neo4jError | neo.DriverError):
        return StoreError(f"{where}: Neo4j rejected the request ({code}: {text})")
    if isinstance(exc, OSError | TimeoutError):
        return TransportError(f"{where}: network error ({type(exc).__name__})")
    return StoreError(f"{where}: unexpected driver failure ({type(exc).__name__})")


_LOST: tuple[type[BaseException], ...] = (
    neo.SessionExpired,
    neo.ServiceUnavailable,
    neo.TransientError,
    OSError,
    TimeoutError,
)


def _lost(exc: BaseException, where: str, code: str, text: str) -> TransportError:
    """A write that ran out of retries on a lost connection or a transient (cluster)
    error after one of its attempts sent COMMIT: a COMMIT answered with such an error may
    still have been applied (a cluster's leader switching), and the driver reports only
    its last attempt's error, so the caller is told the write may have been applied."""
    if isinstance(exc, neo.TransientError):
        why = f"transient failure that outlasted retries ({code}: {text})"
    elif isinstance(exc, OSError | TimeoutError):
        why = f"network error ({type(exc).__name__})"
    else:
        why = f"Neo4j is unreachable ({type(exc).__name__}: {text})"
    return TransportError(
        f"{where}: {why}; the write may or may not have been applied (retry it with an "
        "idempotency_key to be safe)",
        maybe_applied=True,
        retryable=True,
    )


def is_constraint_race(exc: BaseException) -> bool:
    """A unique constraint failed: the transaction rolled back, so rerunning is safe."""
    return isinstance(exc, neo.ConstraintError)


DRIVER_ERRORS: tuple[type[BaseException], ...] = (
    neo.Neo4jError,
    neo.DriverError,
    OSError,
    TimeoutError,
)
