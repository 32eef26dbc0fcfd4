"""Turning a ``bolt://`` / ``neo4j://`` URL plus options into driver settings.

Credentials come from exactly one place: the URL's userinfo, else the ``username`` /
``password`` or ``auth=(user, password)`` options, else ``NEO4J_USERNAME`` /
``NEO4J_PASSWORD``; with none of them the driver connects without auth. Giving them both
in the URL and as options is an error (which one was meant?). A bare ``bolt://`` or
``neo4j://`` (no host) uses the URL in ``NEO4J_URI``. The database comes from
``?database=`` or the ``database`` option (not both, unless equal), else ``NEO4J_DATABASE``,
else the server's default. The password is kept out of every repr and message.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

from memory_core.store import ConfigurationError

SCHEMES = ("bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc")
ROUTING_SCHEMES = ("neo4j", "neo4j+s", "neo4j+ssc")
DEFAULT_PORT = 7687

# Driver options a caller may pass through, with the type each must have.
POOL_OPTIONS: dict[str, tuple[type, ...]] = {
    "max_connection_pool_size": (int,),
    "connection_timeout": (int, float),
    "connection_acquisition_timeout": (int, float),
    "max_transaction_retry_time": (int, float),
    "max_connection_lifetime": (int, float),
    "liveness_check_timeout": (int, float),
}


@dataclass(frozen=True)
class BoltConfig:
    """Everything needed to build the driver, with the secret hidden from ``repr``."""

    uri: str
    database: str | None
    username: str | None
    password: str | None = field(default=None, repr=False)
    driver_options: Mapping[str, Any] = field(default_factory=dict)

    @property
    def auth(self) -> tuple[str, str] | None:
        """The ``(user, password)`` pair for the driver, or ``None`` for no auth."""
        if self.username is None:
            return None
        return (self.username, self.password or "")

    def describe(self) -> str:
        """``scheme://[user@]host:port[/database]`` — never the password."""
        parts = urlsplit(self.uri)
        user = f"{self.username}@" if self.username else ""
        database = f"/{self.database}" if self.database else ""
        return f"{parts.scheme}://{user}{parts.netloc}{database}"


def parse_config(
    url: str,
    *,
    database: str | None = None,
    username: str | None = None,
    password: str | None = None,
    auth: Any = None,
    driver_options: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> BoltConfig:
    """Validate ``url`` and options; raise :class:`ConfigurationError` naming what is wrong."""
    env = os.environ if environ is None else environ
    if not isinstance(url, str):
        raise ConfigurationError(f"bolt backend URL must be a str, got {type(url).__name__}")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise ConfigurationError("bolt backend URL is not a valid URL (bad host or port)") from None
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        raise ConfigurationError(
            f"bolt backend: unsupported scheme {scheme!r} (use {', '.join(SCHEMES)})"
        )
    if not parts.netloc and env.get("NEO4J_URI"):
        # A bare "bolt://" / "neo4j://" means "the Neo4j that NEO4J_URI names".
        return parse_config(
            _with_query(env["NEO4J_URI"], parts.query),
            database=database,
            username=username,
            password=password,
            auth=auth,
            driver_options=driver_options,
            environ={k: v for k, v in env.items() if k != "NEO4J_URI"},
        )
    if not parts.hostname:
        raise ConfigurationError(
            f"bolt backend URL needs a host, e.g. {scheme}://localhost:7687 (a bare {scheme}:// "
            "uses NEO4J_URI, which is not set)"
        )
    if parts.path not in ("", "/"):
        raise ConfigurationError(
            "bolt backend URL must not have a path; name the database with ?database=<name>"
        )
    query, url_database = _split_query(parts.query, scheme)
    chosen_database = _database(url_database, database, env)
    user, secret = _credentials(parts.username, parts.password, username, password, auth, env)
    host = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    netloc = f"{host}:{port or DEFAULT_PORT}"
    uri = urlunsplit((scheme, netloc, "", urlencode(query), ""))
    return BoltConfig(uri, chosen_database, user, secret, _driver_options(driver_options or {}))


def _with_query(url: str, query: str) -> str:
    if not query:
        return url
    return url + ("&" if "?" in url else "?") + query


def _split_query(text: str, scheme: str) -> tuple[list[tuple[str, str]], str | None]:
    """Take ``database`` out of the query; what is left is the routing context."""
    database: str | None = None
    rest: list[tuple[str, str]] = []
    for key, value in parse_qsl(text, keep_blank_values=True):
        if key == "database":
            if not value:
                raise ConfigurationError("bolt backend URL: ?database= must not be empty")
            database = value
        elif key.lower() in ("password", "username", "user", "auth"):
            raise ConfigurationError(
                f"bolt backend URL: credentials do not belong in the query ({key}=...); use "
                "bolt://user:password@host or the username/password options"
            )
        else:
            rest.append((key, value))
    if rest and scheme not in ROUTING_SCHEMES:
        names = ", ".join(sorted({k for k, _ in rest}))
        raise ConfigurationError(
            f"bolt backend URL: unknown query parameter(s) {names}; only 'database' is "
            "accepted (routing context needs a neo4j:// URL)"
        )
    return rest, database


def _database(from_url: str | None, option: Any, env: Mapping[str, str]) -> str | None:
    if option is not None and (not isinstance(option, str) or not option.strip()):
        raise ConfigurationError("bolt backend: database must be a non-empty str")
    if from_url is not None and option is not None and from_url != option:
        raise ConfigurationError(
            f"bolt backend: the URL names database {from_url!r} but database={option!r} was "
            "passed; give it once"
        )
    return from_url or option or env.get("NEO4J_DATABASE") or None


def _credentials(
    url_user: str | None,
    url_password: str | None,
    username: Any,
    password: Any,
    auth: Any,
    env: Mapping[str, str],
) -> tuple[str | None, str | None]:
    explicit = username is not None or password is not None or auth is not None
    if url_user is not None or url_password is not None:
        if explicit:
            raise ConfigurationError(
                "bolt backend: credentials given both in the URL and as options; give them once"
            )
        if not url_user:
            raise ConfigurationError("bolt backend URL has a password but no user name")
        return unquote(url_user), unquote(url_password or "")
    if auth is not None:
        if username is not None or password is not None:
            raise ConfigurationError(
                "bolt backend: pass auth=(user, password) or username/password, not both"
            )
        if (
            not isinstance(auth, tuple | list)
            or len(auth) != 2
            or not all(isinstance(a, str) for a in auth)
        ):
            raise ConfigurationError("bolt backend: auth must be a (user, password) pair of str")
        username, password = auth
    if username is not None or password is not None:
        return _checked_pair(username, password, "username/password options")
    env_user, env_password = env.get("NEO4J_USERNAME"), env.get("NEO4J_PASSWORD")
    if env_user or env_password:
        return _checked_pair(env_user or None, env_password, "NEO4J_USERNAME/NEO4J_PASSWORD")
    return None, None


def _checked_pair(user: Any, password: Any, where: str) -> tuple[str, str]:
    if not isinstance(user, str) or not user:
        raise ConfigurationError(f"bolt backend: {where}: a non-empty user name is required")
    if not isinstance(password, str):
        raise ConfigurationError(f"bolt backend: {where}: the password must be a str")
    return user, password


def _driver_options(options: Mapping[str, Any]) -> dict[str, Any]:
    checked: dict[str, Any] = {}
    for name, value in options.items():
        if value is None:
            continue
        whole = POOL_OPTIONS[name] == (int,)
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or (whole and not isinstance(value, int))
            or not value > 0
        ):
            kind = "int" if whole else "number"
            raise ConfigurationError(f"bolt backend: {name} must be a positive {kind}")
        checked[name] = value
    return checked
