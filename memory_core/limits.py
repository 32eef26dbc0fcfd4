"""Size limits every backend shares (content, metadata, queries, identifiers).

The contract checks them in every public method before anything is written, so an
oversized argument raises the same :class:`~memory_core.errors.InvalidRequestError`
(naming the argument) on every backend. The defaults suit agent memory; a backend opened
with ``limits=Limits(...)`` uses other values (the NAMS-compatible server does, to match
its own configured limits).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from .errors import ConfigurationError

LIMIT_DOCS: dict[str, str] = {
    "max_content_chars": (
        "characters of one message's content (and of an entity description or an idempotency key)"
    ),
    "max_metadata_bytes": "UTF-8 bytes of metadata (or metadata_filters) as compact JSON",
    "max_metadata_depth": "nesting depth of metadata: dicts and lists inside each other",
    "max_query_chars": "characters of a search or context query",
    "max_identifier_bytes": (
        "UTF-8 bytes of an identifier: session_id, user_identifier, title, entity names "
        "and ids, find_entities identifier, list_sessions prefix"
    ),
    "max_mentions": "entity mentions of one message (explicit_mentions, or an extractor's result)",
}


@dataclass(frozen=True)
class Limits:
    """The size limits a backend enforces. Every value is a positive ``int``.

    Defaults: content 1,000,000 characters; metadata 65,536 bytes of JSON and 32 levels
    deep; query 10,000 characters; identifiers 1,024 bytes of UTF-8 (so any identifier
    fits in a Neo4j index key, together with the tenant); 1,000 mentions per message.
    """

    max_content_chars: int = 1_000_000
    max_metadata_bytes: int = 65_536
    max_metadata_depth: int = 32
    max_query_chars: int = 10_000
    max_identifier_bytes: int = 1_024
    max_mentions: int = 1_000

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigurationError(f"Limits.{f.name} must be an int >= 1, got {value!r}")

    def as_dict(self) -> dict[str, int]:
        """Every limit by name."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


DEFAULT_LIMITS = Limits()

assert set(LIMIT_DOCS) == {f.name for f in fields(Limits)}
