"""Where an embedded store lives: parsing ``memory://`` and ``sqlite:///path`` URLs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from memory_core.store import ConfigurationError, redact_url

SQLITE_PREFIX = "sqlite:///"


@dataclass(frozen=True)
class Location:
    """A parsed store URL: ``path`` is ``None`` for a private in-process database."""

    url: str
    path: Path | None

    @property
    def in_memory(self) -> bool:
        """A private in-process database (``memory://``): one connection sees it."""
        return self.path is None


def parse_location(url: object) -> Location:
    """``memory://`` → private in-memory store; ``sqlite:///rel.db`` or ``sqlite:////abs.db``
    → a file (SQLAlchemy's convention: three slashes, then the path). ``sqlite:///:memory:``
    is accepted as an alias of ``memory://``."""
    if not isinstance(url, str):
        raise ConfigurationError(f"embedded backend URL must be a str, got {type(url).__name__}")
    text = url.strip()
    lowered = text.lower()
    if lowered in ("memory://", "memory:///", "memory:"):
        return Location("memory://", None)
    if lowered.startswith("memory:"):
        raise ConfigurationError(
            "memory:// takes no host, path or options (each backend object is its own store); "
            "use sqlite:///path.db for a named, persistent store"
        )
    if not lowered.startswith(SQLITE_PREFIX):
        raise ConfigurationError(
            f"{redact_url(text)!r} is not an embedded store URL; use memory:// or "
            "sqlite:///path/to/file.db"
        )
    raw = text[len(SQLITE_PREFIX) :]
    if raw == ":memory:":
        return Location("memory://", None)
    if not raw or raw.endswith("/"):
        raise ConfigurationError(
            f"{redact_url(text)!r} names no database file; use sqlite:///relative.db or "
            "sqlite:////abs.db"
        )
    return Location(SQLITE_PREFIX + raw, Path(raw))
