"""Turning a user's search text into a safe FTS5 query, and the ``scope`` tokens that
narrow it (the values :mod:`.schema` indexes)."""

from __future__ import annotations

from memory_core.store import engine_terms


def fts_query(text: str) -> str | None:
    """An FTS5 expression matching any whitespace-separated term of ``text`` or any word
    of a term that is more than one (:func:`~memory_core.scoring.engine_terms`).

    Each term is wrapped in double quotes (inner quotes doubled), so FTS5 reads it as a
    plain string: ``"``, ``*``, ``AND``/``OR``/``NOT``/``NEAR``, ``-``, ``:``, ``^`` and
    parentheses are never operators. NUL separates terms. Terms with no letter or digit
    are dropped (they index to nothing); ``None`` means nothing is left to search for.
    """
    # FTS5 parses the query as a C string: a NUL would end it mid-term.
    terms = engine_terms(text.replace("\x00", " "))
    if not terms:
        return None
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)


def conversation_token(conversation_id: str) -> str:
    """The ``scope`` token of a conversation's messages: its id without dashes."""
    return conversation_id.replace("-", "")


def tenant_token(tenant: str) -> str:
    """The ``scope`` token of a multi-tenant store's messages of ``tenant``: ``t`` and
    the tenant's UTF-8 bytes in hex (letters and digits only: one token, whatever the
    user identifier holds)."""
    return "t" + tenant.encode().hex()
