"""Turning a user's search text into a safe FTS5 query."""

from __future__ import annotations

import re

_HAS_WORD = re.compile(r"\w", re.UNICODE)


def fts_query(text: str) -> str | None:
    """An FTS5 expression matching any whitespace-separated term of ``text``.

    Each term is wrapped in double quotes (inner quotes doubled), so FTS5 reads it as a
    plain string: ``"``, ``*``, ``AND``/``OR``/``NOT``/``NEAR``, ``-``, ``:``, ``^`` and
    parentheses are never operators. NUL separates terms. Terms with no letter or digit
    are dropped (they index to nothing); ``None`` means nothing is left to search for.
    """
    # FTS5 parses the query as a C string: a NUL would end it mid-term. A dict keeps the
    # first occurrence of each term in linear time.
    tokens = dict.fromkeys(text.replace("\x00", " ").split())
    terms = [token for token in tokens if _HAS_WORD.search(token)]
    if not terms:
        return None
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)
