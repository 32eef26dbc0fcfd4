"""Parsing a PostgreSQL URL and the backend's options.

The URL is handed to libpq as it is (so the usual ``PG*`` environment variables fill in
what it leaves out: ``PGHOST``, ``PGUSER``, ``PGPASSWORD``, ``PGDATABASE`` …), except for
the ``schema`` query parameter, which is ours and is taken out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from memory_core.store import ConfigurationError, redact_url

SCHEMES = ("postgresql", "postgres")
_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]{0,62}")


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

    @property
    def safe_url(self) -> str:
        """The URL with any password hidden."""
        return redact_url(self.conninfo)


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
) -> Settings:
    """Check the URL and options; ``ConfigurationError`` naming what is wrong."""
    if not isinstance(url, str):
        raise ConfigurationError(f"postgres backend URL must be a str, got {type(url).__name__}")
    parts = urlsplit(url.strip())
    if parts.scheme.lower() not in SCHEMES:
        raise ConfigurationError(
            f"{redact_url(url)!r} is not a PostgreSQL URL; use postgresql://user@host/db"
        )
    query = parse_qsl(parts.query, keep_blank_values=True)
    from_url = [v for k, v in query if k == "schema"]
    rest = [(k, v) for k, v in query if k != "schema"]
    chosen = schema if schema is not None else (from_url[-1] if from_url else "memory_core")
    conninfo = urlunsplit(("postgresql", parts.netloc, parts.path, urlencode(rest), ""))
    _number("min_size", min_size, minimum=0, integer=True)
    _number("max_size", max_size, minimum=1, integer=True)
    if max_size < min_size:
        raise ConfigurationError("max_size must be >= min_size")
    if statement_timeout is not None:
        _number("statement_timeout", statement_timeout, minimum=0)
    if not isinstance(prepared_statements, bool):
        raise ConfigurationError("prepared_statements must be True or False")
    return Settings(
        conninfo=conninfo,
        schema=check_schema(chosen),
        min_size=min_size,
        max_size=max_size,
        pool_timeout=_number("pool_timeout", pool_timeout, minimum=0),
        connect_timeout=_number("connect_timeout", connect_timeout, minimum=1),
        statement_timeout=statement_timeout,
        prepared_statements=prepared_statements,
    )
