"""Settings from the environment, the default store location and URL redaction."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

SECRET_QUERY_KEYS = frozenset(
    {
        "password",
        "api_key",
        "apikey",
        "key",
        "token",
        "secret",
        # libpq's secret connection parameters besides password: those its PQconndefaults
        # marks as a password ("*") or as keys (the SCRAM keys of a passed-through login)
        "sslpassword",
        "oauth_client_secret",
        "scram_client_key",
        "scram_server_key",
    }
)
"""The URL query parameters whose values :func:`redact_url` hides (compared in lower case):
every URL the library shows (``describe()``, ``repr()``, telemetry, archive headers, logs
and errors) goes through it."""


def default_store_path() -> Path:
    """Where the embedded default keeps its database: the user's data directory."""
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA", Path.home() / "AppData" / "Local"))
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / "memory-core" / "memory.db"


def default_url() -> str:
    """``MEMORY_BACKEND_URL`` if set, else the embedded store in the user's data directory."""
    return os.environ.get("MEMORY_BACKEND_URL") or f"sqlite:///{default_store_path()}"


@dataclass(frozen=True)
class Settings:
    """A backend URL plus options, e.g. from :meth:`from_env`.

    Only ``MEMORY_BACKEND_URL`` chooses the backend. Credentials come from the backend's
    own variables when its scheme is chosen: ``NEO4J_USERNAME``, ``NEO4J_PASSWORD``,
    ``NEO4J_DATABASE`` for Bolt; ``MEMORY_API_KEY``, ``MEMORY_WORKSPACE_ID``,
    ``MEMORY_ENDPOINT`` (for a bare ``nams://``) and ``MEMORY_SESSION_SECRET`` (portable
    session names) for NAMS. Nothing is inferred from which key happens to be set.
    """

    url: str
    options: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_env(cls, **options: Any) -> Settings:
        return cls(default_url(), dict(options))

    def __repr__(self) -> str:
        shown = {k: ("***" if _is_secret(k) else v) for k, v in self.options.items()}
        return f"Settings(url={redact_url(self.url)!r}, options={shown!r})"


def _is_secret(name: str) -> bool:
    lowered = name.lower()
    return any(word in lowered for word in ("password", "key", "token", "secret", "auth"))


def redact_url(url: str) -> str:
    """``url`` with any password and secret-looking query value replaced by ``***``."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparseable url>"
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, host = netloc.rpartition("@")
        user = userinfo.split(":", 1)[0]
        netloc = f"{user}:***@{host}" if ":" in userinfo else f"{user}@{host}"
    pairs = parse_qsl(parts.query)
    query = urlencode([(k, "***" if k.lower() in SECRET_QUERY_KEYS else v) for k, v in pairs])
    if netloc == parts.netloc and query == urlencode(pairs):
        return url  # nothing secret; urlunsplit would turn "memory://" into "memory:"
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
