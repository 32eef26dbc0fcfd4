"""Parsing a PostgreSQL URL and the backend's options.

The URL is handed to libpq as it is (so the usual ``PG*`` environment variables fill in
what it leaves out: ``PGHOST``, ``PGUSER``, ``PGPASSWORD``, ``PGDATABASE`` …), except for
the ``schema`` and ``require_standby`` query parameters, which are ours and are taken
out. Every other query parameter must be one of libpq's connection parameters: anything
else is a ``ConfigurationError`` naming it, before anything connects.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from functools import cache
from urllib.parse import quote, unquote, urlsplit

import psycopg
from psycopg import pq
from psycopg.conninfo import conninfo_to_dict

from memory_core.store import ConfigurationError, redact_url

SCHEMES = ("postgresql", "postgres")
LOAD_BALANCING_LIBPQ = 160000  # libpq's load_balance_hosts came in PostgreSQL 16
_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]{0,62}")
# What the backend takes as keyword arguments, not in the URL.
_BACKEND_OPTIONS = frozenset(
    {
        "min_size",
        "max_size",
        "pool_timeout",
        "statement_timeout",
        "prepared_statements",
        "read_from",
        "replica_wait",
    }
)
READ_FROM = ("primary", "replica")
_OURS = ("schema", "require_standby")  # query parameters the backend takes out of the URL
_BOOLEANS = {"true": True, "false": False}


@dataclass(frozen=True)
class Settings:
    """What :class:`~.backend.PostgresStore` needs to connect."""

    conninfo: str = field(repr=False)  # may hold a password: shown only as safe_url
    schema: str
    min_size: int
    max_size: int
    pool_timeout: float
    connect_timeout: float
    statement_timeout: float | None
    prepared_statements: bool
    read_from: str = "primary"
    replica_wait: float = 1.0
    require_standby: bool = False

    @property
    def safe_url(self) -> str:
        """The URL with any password hidden."""
        return redact_url(self.conninfo)

    @property
    def replica_conninfo(self) -> str:
        """The URL reads use with ``read_from="replica"``: :attr:`conninfo` with
        ``target_session_attrs=prefer-standby`` (a standby among its hosts, else the
        primary) and, with libpq 16 or later, ``load_balance_hosts=random`` unless the URL
        says otherwise (each connection tries the hosts in a random order, so the reads
        spread over the standbys instead of all going to the first one listed)."""
        base, _, query = self.conninfo.partition("?")
        pieces = list(filter(None, query.split("&")))
        names = {unquote(piece.partition("=")[0]) for piece in pieces}
        kept = [p for p in pieces if unquote(p.partition("=")[0]) != "target_session_attrs"]
        if "load_balance_hosts" not in names and pq.version() >= LOAD_BALANCING_LIBPQ:
            kept.append("load_balance_hosts=random")
        return f"{base}?{'&'.join([*kept, 'target_session_attrs=prefer-standby'])}"


def check_schema(name: object) -> str:
    """A schema name: lower-case letters, digits and ``_``, not starting with a digit
    (so it never needs quoting and can never be read as SQL)."""
    if not isinstance(name, str) or not _IDENTIFIER.fullmatch(name):
        raise ConfigurationError(
            "schema must be a PostgreSQL identifier of lower-case letters, digits and _ "
            f"(at most 63, not starting with a digit), got {name!r}"
        )
    return name


def _number(name: str, value: object, *, minimum: float, integer: bool = False) -> float:
    kinds = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds) or not value >= minimum:
        kind = "an int" if integer else "a number"
        raise ConfigurationError(f"{name} must be {kind} >= {minimum}, got {value!r}")
    return float(value)


def parse_settings(
    url: object,
    *,
    schema: str | None,
    min_size: int,
    max_size: int,
    pool_timeout: float,
    connect_timeout: float,
    statement_timeout: float | None,
    prepared_statements: bool,
    read_from: str = "primary",
    replica_wait: float = 1.0,
    require_standby: bool | None = None,
) -> Settings:
    """Check the URL and options; ``ConfigurationError`` naming what is wrong. An option
    given both ways (``schema``, ``require_standby``) is taken from the keyword."""
    if not isinstance(url, str):
        raise ConfigurationError(f"postgres backend URL must be a str, got {type(url).__name__}")
    conninfo, ours = _conninfo(url)
    chosen = schema if schema is not None else ours.get("schema")
    chosen = "memory_core" if chosen is None else chosen
    _number("min_size", min_size, minimum=0, integer=True)
    _number("max_size", max_size, minimum=1, integer=True)
    if max_size < min_size:
        raise ConfigurationError("max_size must be >= min_size")
    if statement_timeout is not None:
        _number("statement_timeout", statement_timeout, minimum=0)
    if not isinstance(prepared_statements, bool):
        raise ConfigurationError("prepared_statements must be True or False")
    if read_from not in READ_FROM:
        raise ConfigurationError(f"read_from must be 'primary' or 'replica', got {read_from!r}")
    return Settings(
        conninfo=conninfo,
        schema=check_schema(chosen),
        min_size=min_size,
        max_size=max_size,
        pool_timeout=_number("pool_timeout", pool_timeout, minimum=0),
        connect_timeout=_number("connect_timeout", connect_timeout, minimum=1),
        statement_timeout=statement_timeout,
        prepared_statements=prepared_statements,
        read_from=read_from,
        replica_wait=_number("replica_wait", replica_wait, minimum=0),
        require_standby=_require_standby(require_standby, ours.get("require_standby")),
    )


def _require_standby(given: object, from_url: str | None) -> bool:
    if given is None:
        if from_url is None:
            return False
        if from_url.lower() not in _BOOLEANS:
            raise ConfigurationError(
                f"require_standby in the URL must be true or false, got {from_url!r}"
            )
        return _BOOLEANS[from_url.lower()]
    if not isinstance(given, bool):
        raise ConfigurationError(f"require_standby must be True or False, got {given!r}")
    return given


def _conninfo(url: str) -> tuple[str, dict[str, str]]:
    """The libpq connection URI for ``url`` (scheme ``postgresql``, our parameters taken
    out) and the values of ours it gave (``schema``, ``require_standby``). The rest of
    the query is passed on byte for byte: libpq decodes it (``%20`` is a space, ``+``
    stays a plus)."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        parts = None
    if parts is None or parts.scheme.lower() not in SCHEMES:
        raise ConfigurationError(
            f"{redact_url(url)!r} is not a PostgreSQL URL; use postgresql://user@host/db"
        )
    kept: list[str] = []
    ours: dict[str, str] = {}
    for piece in filter(None, parts.query.split("&")):  # libpq allows a trailing "&"
        key, _, value = piece.partition("=")
        if unquote(key) in _OURS:
            ours[unquote(key)] = unquote(value)
        else:
            _check_option(unquote(key))
            kept.append(piece)
    # built by hand: urlunsplit drops the "//" of an empty host ("postgresql:///db")
    conninfo = f"postgresql://{parts.netloc}{parts.path}"
    conninfo += f"?{'&'.join(kept)}" if kept else ""
    _check_syntax(url, conninfo)
    return conninfo, ours


@cache
def url_options() -> tuple[str, ...]:
    """The query parameters a URL may carry: ours (``schema``, ``require_standby``) and the
    connection parameters of the libpq psycopg runs on (``ssl`` too: libpq reads
    ``ssl=true`` as ``sslmode=require``)."""
    names = {item.keyword.decode() for item in pq.Conninfo.get_defaults()}
    return tuple(sorted(names | {*_OURS, "ssl"}))


def _check_option(name: str) -> None:
    """``ConfigurationError`` for a query parameter neither libpq nor we know, naming it
    and the closest known one."""
    known = url_options()
    if name in known:
        return
    if name in _BACKEND_OPTIONS:
        raise ConfigurationError(
            f"{name!r} is an option of the postgres backend, not of its URL: pass it as a "
            f"keyword argument (open_backend(url, {name}=...))"
        )
    close = difflib.get_close_matches(name, known, n=1)
    guess = f"did you mean {close[0]!r}? " if close else ""
    raise ConfigurationError(
        f"the PostgreSQL URL has an unknown option {name!r}: {guess}"
        "the URL's options are schema, require_standby and libpq's connection "
        f"parameters: {', '.join(known)}"
    )


def _check_syntax(url: str, conninfo: str) -> None:
    """``ConfigurationError`` when libpq cannot parse the URI (its reason, with any secret
    of the URL hidden: libpq quotes a badly percent-encoded value whole)."""
    try:
        conninfo_to_dict(conninfo)
    except psycopg.Error as exc:
        reason = " ".join(hide_secrets(str(exc), conninfo).split())
        raise ConfigurationError(
            f"{redact_url(url)!r} is not a valid PostgreSQL URL: {reason}"
        ) from None  # the driver's text may quote a secret


def _secrets_of(conninfo: str) -> set[str]:
    """The secret values ``conninfo`` carries (its password, ``sslpassword`` …), raw and
    decoded."""
    found: set[str] = set()
    parts = urlsplit(conninfo)
    userinfo = parts.netloc.rpartition("@")[0]
    if ":" in userinfo:
        found.add(userinfo.split(":", 1)[1])
    for piece in parts.query.split("&") if parts.query else ():
        key, _, value = piece.partition("=")
        if _is_secret(unquote(key)):
            found.add(value)
    return found | {unquote(value) for value in found}


def _is_secret(key: str) -> bool:
    """Whether :func:`redact_url` hides the value of query parameter ``key``."""
    probe = f"postgresql://h/?{quote(key)}=v"
    return redact_url(probe) != probe


def hide_secrets(text: str, conninfo: str, *more: str) -> str:
    """``text`` with every secret value of ``conninfo`` (and each of ``more``) replaced
    by ``***``."""
    secrets = _secrets_of(conninfo) | set(more)
    for secret in sorted(filter(None, secrets), key=len, reverse=True):
        text = text.replace(secret, "***")
    return text
